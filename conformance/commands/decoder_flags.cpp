#include "conformance/commands/decoder_flags.h"

#include "impl/decoding/exspec.h"

namespace specgate::cli {

int64_t DecoderFlags::exspec_window() const {
  const int64_t resolved = window > 0 ? window : 2 * batch_size;
  validate(ExspecOptions{.batch_size = batch_size, .window = resolved});
  return resolved;
}

void add_decoder_flags(CLI::App& command, DecoderFlags& flags) {
  command.add_option("--batch-size", flags.batch_size, "Sequences per batch")->capture_default_str()->check(CLI::Range(1, 4096));
  command.add_option("--window", flags.window, "exspec: sequences active at once, at least --batch-size (default 2x)")
      ->check(CLI::Range(1, 1 << 20));
  add_draft_tokens_flag(command, flags.draft_tokens, "K, drafts per round")->capture_default_str();
}

CLI::Option* add_draft_tokens_flag(CLI::App& command, int64_t& draft_tokens, const std::string& help) {
  return command.add_option("--draft-tokens", draft_tokens, help)->check(CLI::Range(1, 64));
}

}  // namespace specgate::cli
