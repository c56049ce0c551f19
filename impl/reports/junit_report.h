#pragma once

#include <ostream>

#include "impl/scoring/score_report.h"

namespace specgate {

// JUnit XML: a testsuite per Spec-Bench subtask with a testcase per question (a <failure>
// with the first divergence when it is not exact), a "question_ids" suite when the candidate
// answers questions the reference lacks, and a "gate" suite with the verdict.
void write_junit_report(const ScoreReport& report, std::ostream& out);

}  // namespace specgate
