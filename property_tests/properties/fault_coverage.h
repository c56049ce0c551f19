#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/decoding/decoder_kind.h"
#include "impl/decoding/faults.h"

namespace specgate::props {

// How much of the batch layout a run must exercise before each seeded greedy fault shows in
// its answers, as `score` sees them (tokens unlike the oracle's). Each trial is a fresh tiny
// float64 target and 4 or 8 random prompts decoded with K 4 and 32 new tokens, every row
// rejecting every draft except in `ragged_rounds` rounds, in each of which one row keeps 1 to K
// drafts: that many ragged rounds, and the realignments they cause.
struct FaultCoverageOptions {
  int64_t trials = 40;  // per fault, per decoder, per ragged-round count
  uint64_t seed = 1;
  std::vector<int64_t> ragged_rounds = {0, 1, 2, 4, 8};
  std::vector<Fault> faults;  // empty: every greedy fault the decoders can commit, cancel-shifts-rows aside
  std::function<void(const std::string&)> progress;
};

// Outcomes over runs (or rows) that had `realignments` in [low, high].
struct CoverageBucket {
  int64_t low = 0, high = 0;
  int64_t count = 0, caught = 0;
};

struct FaultCoverage {
  Fault fault{};
  DecoderKind decoder{};
  std::vector<CoverageBucket> rows;  // by the row's own realignments: did its answer differ
  std::vector<CoverageBucket> runs;  // by the run's realignments, summed over rows: did any answer differ
  int64_t errors = 0;                // runs the decoder failed outright (counted as caught)
  // A realigned row's chance of showing the fault, per realignment: 1 - (rows kept exact per
  // realignment)^(1/realignment), pooled over rows with at least one; and how many realignments
  // in a run make missing it less likely than 5%, at that rate (none when it never showed).
  double per_realignment = 0.0;
  std::optional<int64_t> realignments_for_95;
  // Some row that never realigned differed: the fault shows without the layout moving.
  bool shows_without_realignment = false;
};

struct FaultCoverageTable {
  FaultCoverageOptions options;
  std::vector<FaultCoverage> faults;
  // The largest realignments_for_95 over the layout faults that need a realignment to show.
  std::optional<int64_t> threshold;
};

// Faults of the batch layout: where rows' K/V sit and how they are addressed.
bool is_layout_fault(Fault fault);

FaultCoverageTable measure_fault_coverage(const FaultCoverageOptions& options);

nlohmann::json to_json(const FaultCoverageTable& table);
// The table as Markdown, with how it was measured.
std::string to_markdown(const FaultCoverageTable& table);

}  // namespace specgate::props
