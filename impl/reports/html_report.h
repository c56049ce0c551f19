#pragma once

#include <ostream>

#include "impl/scoring/score_report.h"

namespace specgate {

// One self-contained HTML page (inline CSS and SVG, no scripts, nothing fetched): the
// verdict and its reasons, summary figures, exact and partial match per subtask as bars, a
// histogram of first-divergence positions by attribution, the per-subtask table, every
// diverging question with its context, id problems, inputs and settings.
void write_html_report(const ScoreReport& report, std::ostream& out);

}  // namespace specgate
