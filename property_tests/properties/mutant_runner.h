#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/decoding/faults.h"
#include "property_tests/properties/decode_case.h"

namespace specgate::props {

struct DecodeProperty;

// The name under which the sampling distribution test reports, after the decode properties.
inline constexpr std::string_view kDistributionProperty = "sampling-distribution";

struct MutantRunOptions {
  int cases = 100;          // RapidCheck cases per property
  uint64_t seed = 1;        // RapidCheck's seed, the same for every property
  int max_size = 100;       // RapidCheck's maximum size
  bool shrink = true;
  std::function<void(const std::string&)> progress;  // one line per property tried
};

struct MutantOutcome {
  Fault fault{};
  bool killed = false;
  std::string property;          // the first property (in decode_properties() order) that failed
  int64_t cases = 0;             // cases that property ran up to and including the first failure
  int64_t shrinks = 0;           // accepted shrinking steps
  std::string verdict;           // the property's message on the shrunk counterexample
  nlohmann::json counterexample; // summary of the shrunk case (batch size, prompt lengths, K, script)
  std::optional<DecodeCase> decode_case;  // the shrunk case, for the decode properties
  double seconds = 0.0;
};

// Runs one decode property with RapidCheck under `faults`. True when it fails, with `outcome`
// holding the property, the cases run and the (shrunk) counterexample.
bool find_counterexample(const DecodeProperty& property, const FaultSet& faults, const MutantRunOptions& options,
                         MutantOutcome& outcome);

// Runs the decode properties against the decoders with `fault` injected, in order, until one
// fails (RapidCheck, shrinking the counterexample), then the sampling distribution test over
// its panel (shrunk by simplifying the failing scenario). A sampling fault meets the
// distribution test first.
MutantOutcome run_mutant(Fault fault, const MutantRunOptions& options);

nlohmann::json to_json(const MutantOutcome& outcome);

}  // namespace specgate::props
