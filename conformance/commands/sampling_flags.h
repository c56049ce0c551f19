#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "impl/sampling/sampling.h"

namespace specgate::cli {

// --temperature, --top-k, --top-p, --min-p and --seed: how tokens are sampled, declared once for
// every command that takes them, into a SamplingParams (flags not given keep its defaults), which
// the command checks with validate(). What they mean is the command's `use`.
enum class SamplingUse {
  kDecode,    // generate: the engine samples so; a flag not given keeps its default
  kSend,      // collect: sent to the server, --temperature always, the others only when given
  kWarpers,   // sampling, acceptance: the warpers an engine sampled with, when given (no --seed)
};

void add_sampling_flags(CLI::App& command, SamplingParams& flags, SamplingUse use);

// kWarpers: the flags' warpers when any is given, else nullopt (the answers' own); InputError when
// --top-k, --top-p or --min-p comes without --temperature, or a value is out of range.
std::optional<SamplingParams> given_warpers(const SamplingParams& flags, const CLI::App& command);

// --engine-dtype and --support-margin of sampling and acceptance: how far outside the re-scorer's
// support a token may lie and still be drawn by a correct engine (resolve_support_margin).
struct SupportMarginFlags {
  std::string engine_dtype;
  double support_margin = 0.0;
};
void add_support_margin_flags(CLI::App& command, SupportMarginFlags& flags);
// The flags given, as resolve_support_margin takes them.
std::optional<std::string> given_engine_dtype(const SupportMarginFlags& flags, const CLI::App& command);
std::optional<double> given_support_margin(const SupportMarginFlags& flags, const CLI::App& command);

}  // namespace specgate::cli
