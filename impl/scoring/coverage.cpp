#include "impl/scoring/coverage.h"

#include <vector>

#include "impl/common/counted.h"
#include "impl/common/short_number.h"

namespace specgate {

bool pages_its_cache(const std::optional<std::string>& server) { return server == "vllm" || server == "sglang"; }

void Coverage::add(const AnswerSpeed& answer) {
  const bool first = answers == 0;
  ++answers;
  if (answer.run && pages_its_cache(answer.run->server)) ++paged;
  rounds += answer.accept_steps;
  if (answer.run && answer.run->batch_size > 1) ++batched;
  if (answer.drafted_tokens && answer.accepted_drafts && (first || drafted)) {
    drafted = drafted.value_or(0) + *answer.drafted_tokens;
    accepted = accepted.value_or(0) + *answer.accepted_drafts;
  } else {
    drafted.reset();
    accepted.reset();
  }
  if (!answer.ragged_rounds || !answer.realignments) return;
  ++reporting;
  ragged_rounds += *answer.ragged_rounds;
  realignments += *answer.realignments;
  finished_early += answer.finished_early.value_or(0);
}

std::string coverage_line(const Coverage& c) {
  std::vector<std::string> parts;
  if (c.rounds > 0) parts.push_back(counted(c.rounds, "round"));
  if (c.drafted) {
    std::string drafts = std::to_string(*c.accepted) + " of " + counted(*c.drafted, "draft") + " accepted";
    if (*c.drafted > 0)
      drafts += " (accepted/drafted " +
                short_number(100.0 * static_cast<double>(*c.accepted) / static_cast<double>(*c.drafted), 3) + "%)";
    parts.push_back(drafts);
  }
  if (c.known()) {
    parts.push_back(counted(c.ragged_rounds, "ragged round"));
    parts.push_back(counted(c.realignments, "realignment"));
    parts.push_back(counted(c.finished_early, "answer") + " finished while others went on");
  } else if (c.paged == c.answers) {
    parts.push_back("every answer served from a paged KV cache, which never pads or realigns rows: the layout faults do "
                    "not apply (differential's crowds test its batching)");
  } else {
    parts.push_back(std::to_string(c.answers - c.reporting) + " of " + counted(c.answers, "answer") +
                    " do not say how their batch was laid out (ragged_rounds, realignments)");
  }
  std::string line = "coverage (summed over answers): ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? "" : ", ") + parts[i];
  return line;
}

std::optional<std::string> realignment_warning(std::optional<int64_t> realignments, std::string_view uncounted) {
  const std::string need = "the seeded layout faults need " + std::to_string(kLayoutFaultRealignments) +
                           " to show 95% of the time (reports/property_tests/fault_coverage.md)";
  if (!realignments)
    return "coverage unknown: " + std::string(uncounted) + ", so this run may not have exercised the batch layout at "
           "all; " + need;
  if (*realignments >= kLayoutFaultRealignments) return std::nullopt;
  return "coverage too low: " + counted(*realignments, "realignment") + " in this run, and " + need +
         ": a layout fault could have passed unseen";
}

std::optional<std::string> coverage_warning(const Coverage& c) {
  if (c.answers == 0) return std::nullopt;
  if (!c.known() && c.batched == 0 && c.drafted.value_or(0) == 0) return std::nullopt;
  if (!c.known() && c.paged == c.answers) return std::nullopt;
  return realignment_warning(c.known() ? std::optional(c.realignments) : std::nullopt,
                             "the answers do not count their realignments (collect prints a server's own count where its "
                             "GET /metrics has one)");
}

}  // namespace specgate
