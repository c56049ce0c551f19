#pragma once

#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "impl/scoring/acceptance_check.h"

namespace specgate {

// The reports of `conformance acceptance`: JSON, Markdown, HTML and JUnit XML (one case).
nlohmann::json acceptance_report_json(const AcceptanceCheckReport& report);
void write_acceptance_markdown(const AcceptanceCheckReport& report, std::ostream& out);
// A self-contained HTML page with the same: the verdict, the figures, and the rounds that differ.
void write_acceptance_html(const AcceptanceCheckReport& report, std::ostream& out);
void write_acceptance_junit(const AcceptanceCheckReport& report, std::ostream& out);

// The figures and the verdict, as the command prints them.
void write_acceptance_summary(const AcceptanceCheckReport& report, std::ostream& out);

}  // namespace specgate
