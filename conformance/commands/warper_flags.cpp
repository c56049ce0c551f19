#include "conformance/commands/warper_flags.h"

#include "impl/common/error.h"

namespace specgate::cli {

void add_warper_flags(CLI::App& command, WarperFlags& flags) {
  command.add_option("--temperature", flags.temperature,
                     "The engine's temperature; with --top-k, --top-p and --min-p it replaces every answer's run.sampling");
  command.add_option("--top-k", flags.top_k, "The engine's top-k (0: off)")->check(CLI::NonNegativeNumber);
  command.add_option("--top-p", flags.top_p, "The engine's top-p (1: off)");
  command.add_option("--min-p", flags.min_p, "The engine's min-p (0: off)");
}

std::optional<SamplingParams> given_warpers(const WarperFlags& flags, const CLI::App& command) {
  const bool given = command.count("--temperature") + command.count("--top-k") + command.count("--top-p") +
                         command.count("--min-p") > 0;
  if (!given) return std::nullopt;
  if (command.count("--temperature") == 0)
    throw InputError("--top-k, --top-p, --min-p: give --temperature with them (the flags replace the answers' run.sampling)");
  return SamplingParams{.temperature = flags.temperature, .top_k = flags.top_k, .top_p = flags.top_p, .min_p = flags.min_p};
}

}  // namespace specgate::cli
