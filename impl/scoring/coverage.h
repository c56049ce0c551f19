#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/scoring/answer_reader.h"

namespace specgate {

// Realignments a run needs before every seeded layout fault that shows only in rows that moved
// shows in its answers 95% of the time: the larger of what tiny models (7) and the real pair
// (12) ask, reports/property_tests/fault_coverage.md (./ci/fault-coverage.sh).
inline constexpr int64_t kLayoutFaultRealignments = 12;

// Whether a server keeps each sequence's K/V in blocks of a paged cache (vLLM, SGLang), by what
// it calls itself: its batch has no rectangular layout, so no row is ever padded or realigned.
bool pages_its_cache(const std::optional<std::string>& server);

// What one side's answers say their run exercised of speculation and of the batch layout.
struct Coverage {
  int64_t answers = 0;
  int64_t reporting = 0;  // of them, those carrying ragged_rounds and realignments
  int64_t batched = 0;    // of them, those whose run decoded more than one sequence at a time
  int64_t paged = 0;      // of them, those served from a paged cache (pages_its_cache)
  int64_t rounds = 0;     // target passes after the prompt's, where accept_lengths say
  std::optional<int64_t> drafted, accepted;  // where every answer says
  int64_t ragged_rounds = 0, realignments = 0, finished_early = 0;  // summed over the reporting answers

  void add(const AnswerSpeed& answer);
  // Whether every answer says how its batch was laid out.
  bool known() const { return answers > 0 && reporting == answers; }
};

// "coverage (summed over answers): 45 rounds, 12 of 180 drafts accepted (accepted/drafted 6.7%), 9 ragged rounds,
// 14 realignments, 2 answers finished while others went on".
std::string coverage_line(const Coverage& coverage);
// Why the run could not have caught the layout faults, where it could not: it realigned
// fewer rows than kLayoutFaultRealignments, or its answers do not say; none for a run of one
// sequence at a time that drafted nothing, nor for answers all served from a paged cache.
std::optional<std::string> coverage_warning(const Coverage& coverage);
// The same for a run whose realignments are counted as a whole (a server's counters), or not
// at all (none, for the reason `uncounted` gives).
std::optional<std::string> realignment_warning(std::optional<int64_t> realignments, std::string_view uncounted);

}  // namespace specgate
