#include "conformance/commands/decoder_flags.h"

#include "impl/decoding/exspec.h"
#include "impl/decoding/ngram_drafter.h"

namespace specgate::cli {

int64_t DecoderFlags::exspec_window() const {
  const int64_t resolved = window > 0 ? window : 2 * batch_size;
  validate(ExspecOptions{.batch_size = batch_size, .window = resolved});
  return resolved;
}

Drafting DraftingFlags::drafting() const {
  const Drafting drafting{.ngram = drafter == "ngram", .lookup = {.min_n = ngram_min, .max_n = ngram_max, .through_eos = ngram_through_eos}};
  validate(drafting.lookup);
  return drafting;
}

void add_drafting_flags(CLI::App& command, DraftingFlags& flags) {
  command.add_option("--drafter", flags.drafter, "What speculative engines draft with: model (--draft) or ngram (prompt lookup)")
      ->capture_default_str()
      ->check(CLI::IsMember({"model", "ngram"}));
  command.add_option("--ngram-min", flags.ngram_min, "ngram: the shortest n-gram matched")->capture_default_str();
  command.add_option("--ngram-max", flags.ngram_max, "ngram: the longest n-gram matched, tried first")->capture_default_str();
  command.add_flag("--ngram-through-eos", flags.ngram_through_eos,
                   "ngram: proposals run on past EOS ids, as vLLM's NgramProposer's do (transformers' stop before the first)");
}

void add_decoder_flags(CLI::App& command, DecoderFlags& flags) {
  command.add_option("--batch-size", flags.batch_size, "Sequences per batch")->capture_default_str()->check(CLI::Range(1, 4096));
  command.add_option("--window", flags.window, "exspec: sequences active at once, at least --batch-size (default 2x)")
      ->check(CLI::Range(1, 1 << 20));
  add_draft_tokens_flag(command, flags.draft_tokens, "K, drafts per round")->capture_default_str();
  add_drafting_flags(command, flags.drafting);
}

CLI::Option* add_draft_tokens_flag(CLI::App& command, int64_t& draft_tokens, const std::string& help) {
  return command.add_option("--draft-tokens", draft_tokens, help)->check(CLI::Range(1, 64));
}

}  // namespace specgate::cli
