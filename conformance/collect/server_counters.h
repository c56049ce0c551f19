#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "conformance/collect/http_client.h"

namespace specgate::cli {

// A server's own speculation counters, from its Prometheus GET /metrics: vLLM's
// vllm:spec_decode_num_drafts, _num_draft_tokens and _num_accepted_tokens (serve exposes the
// same), and serve's specgate:ragged_rounds and specgate:realignments (per sequence, summed).
// Each sums the series of every label set.
struct SpeculationCounters {
  int64_t drafts = 0, draft_tokens = 0, accepted_tokens = 0;
  std::optional<int64_t> ragged_rounds, realignments;
};

// What a run added between two readings of one server; none when a counter went back (the
// server restarted).
std::optional<SpeculationCounters> counted_between(const SpeculationCounters& before, const SpeculationCounters& after);

// The counters in Prometheus text exposition format; none when it has no vLLM speculation
// counter. Lines it cannot read are skipped, as Prometheus clients skip them.
std::optional<SpeculationCounters> parse_speculation_counters(std::string_view text);

// GET /metrics within 10 s; none when the server has no such page or no speculation counters.
std::optional<SpeculationCounters> read_speculation_counters(const Endpoint& endpoint);

// "server counters (GET /metrics): 120 drafts, 96 of 480 draft tokens accepted (accepted/drafted
// 20.0%), 14 ragged rounds, 31 realignments".
std::string counters_line(const SpeculationCounters& counters);

}  // namespace specgate::cli
