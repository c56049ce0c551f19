#pragma once

#include <cstdint>
#include <optional>

#include <CLI/CLI.hpp>

#include "impl/sampling/sampling.h"

namespace specgate::cli {

// --temperature, --top-k, --top-p and --min-p: the warpers an engine sampled with, replacing its
// answers' run.sampling when given.
struct WarperFlags {
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
};

void add_warper_flags(CLI::App& command, WarperFlags& flags);

// The flags' warpers when any is given, else nullopt (the answers' own); InputError when --top-k,
// --top-p or --min-p comes without --temperature.
std::optional<SamplingParams> given_warpers(const WarperFlags& flags, const CLI::App& command);

}  // namespace specgate::cli
