#pragma once

#include <ostream>

#include "impl/scoring/score_report.h"

namespace specgate {

// A summary for a CI job page (GitHub's step summary): the verdict, a table per subtask, the
// gate's reasons and the first divergences.
void write_markdown_report(const ScoreReport& report, std::ostream& out);

}  // namespace specgate
