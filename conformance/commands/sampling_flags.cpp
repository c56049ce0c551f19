#include "conformance/commands/sampling_flags.h"

#include "conformance/commands/seed_check.h"
#include "impl/common/error.h"

namespace specgate::cli {

void add_sampling_flags(CLI::App& command, SamplingParams& flags, SamplingUse use) {
  const bool decode = use == SamplingUse::kDecode, send = use == SamplingUse::kSend;
  const auto help = [&](const char* decoding, const char* sent, const char* warpers) {
    return decode ? decoding : send ? sent : warpers;
  };
  CLI::Option* temperature = command.add_option(
      "--temperature", flags.temperature,
      help("0 means greedy", "Always sent; 0 means greedy",
           "The engine's temperature; with --top-k, --top-p and --min-p it replaces every answer's run.sampling"));
  CLI::Option* top_k =
      command.add_option("--top-k", flags.top_k, help("0 means off", "Sent only when given", "The engine's top-k (0: off)"));
  CLI::Option* top_p =
      command.add_option("--top-p", flags.top_p, help("1 means off", "Sent only when given", "The engine's top-p (1: off)"));
  CLI::Option* min_p =
      command.add_option("--min-p", flags.min_p, help("0 means off", "Sent only when given", "The engine's min-p (0: off)"));
  if (decode) {
    for (CLI::Option* option : {top_k, top_p, min_p}) option->capture_default_str();
  }
  if (decode || send) temperature->capture_default_str();
  if (use == SamplingUse::kWarpers) return;
  CLI::Option* seed = command.add_option(
      "--seed", flags.seed, decode ? "Seed of every sequence's random stream" : "Sent only when given");
  seed->check(seed_check());
  if (decode) seed->capture_default_str();
}

std::optional<SamplingParams> given_warpers(const SamplingParams& flags, const CLI::App& command) {
  const bool given = command.count("--temperature") + command.count("--top-k") + command.count("--top-p") +
                         command.count("--min-p") > 0;
  if (!given) return std::nullopt;
  if (command.count("--temperature") == 0)
    throw InputError("--top-k, --top-p, --min-p: give --temperature with them (the flags replace the answers' run.sampling)");
  validate(flags);
  return flags;
}

void add_support_margin_flags(CLI::App& command, SupportMarginFlags& flags) {
  command.add_option("--engine-dtype", flags.engine_dtype,
                     "The engine's floating-point type (float64, float32, bfloat16, float16), which sizes the support "
                     "margin; needed where the answers record no run.dtype");
  command.add_option("--support-margin", flags.support_margin,
                     "Logits a token may lie outside the support and count as on its boundary (replaces "
                     "--engine-dtype's margin)");
}

std::optional<std::string> given_engine_dtype(const SupportMarginFlags& flags, const CLI::App& command) {
  return command.count("--engine-dtype") > 0 ? std::optional(flags.engine_dtype) : std::nullopt;
}

std::optional<double> given_support_margin(const SupportMarginFlags& flags, const CLI::App& command) {
  return command.count("--support-margin") > 0 ? std::optional(flags.support_margin) : std::nullopt;
}

}  // namespace specgate::cli
