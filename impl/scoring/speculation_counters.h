#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace specgate {

// A server's own speculation counters over a run, as its Prometheus GET /metrics counts them:
// vLLM's vllm:spec_decode_num_drafts (verify steps with drafts), _num_draft_tokens and
// _num_accepted_tokens, and serve's specgate:ragged_rounds and specgate:realignments (per
// sequence, summed). vLLM's vllm:spec_decode_num_accepted_tokens_per_pos counts, for each draft
// position (0-based), the drafts accepted there.
struct SpeculationCounters {
  int64_t drafts = 0, draft_tokens = 0, accepted_tokens = 0;
  std::optional<int64_t> ragged_rounds, realignments;
  std::vector<int64_t> accepted_per_position;  // empty where the server has no such counter
};

// {"drafts": 120, "draft_tokens": 480, "accepted_tokens": 96, "accepted_per_position": [60, 24, 9, 3]}
// and, where counted, "ragged_rounds" and "realignments": what `collect --counters` writes.
nlohmann::json speculation_counters_json(const SpeculationCounters& counters);

// The counters `collect --counters` wrote, or any file of that shape; throws InputError naming
// the file and field.
SpeculationCounters read_speculation_counters_file(const std::filesystem::path& path);

}  // namespace specgate
