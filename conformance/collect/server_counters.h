#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/collect/http_client.h"
#include "impl/scoring/speculation_counters.h"

namespace specgate::cli {

// What a run added between two readings of one server; none when a counter went back (the
// server restarted).
std::optional<SpeculationCounters> counted_between(const SpeculationCounters& before, const SpeculationCounters& after);

// The counters in Prometheus text exposition format; none when it has no vLLM speculation
// counter. Lines it cannot read are skipped, as Prometheus clients skip them.
std::optional<SpeculationCounters> parse_speculation_counters(std::string_view text);

// GET /metrics within 10 s; none when the server has no such page or no speculation counters.
std::optional<SpeculationCounters> read_speculation_counters(const Endpoint& endpoint);

// "server counters (GET /metrics): 120 drafts, 96 of 480 draft tokens accepted (accepted/drafted
// 20.0%), 14 ragged rounds, 31 realignments", and with vLLM's counts per draft position, "accepted
// at draft positions 1-4: 60, 24, 9, 3 (of 120 drafts: 50%, 20%, 7.5%, 2.5%)": a verifier's
// acceptance can only fall from one position to the next, each draft being reached only where
// the one before it was accepted.
std::string counters_line(const SpeculationCounters& counters);

}  // namespace specgate::cli
