#pragma once

#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "conformance/differential/differential.h"

namespace specgate::cli {

inline constexpr int kDifferentialReportSchemaVersion = 3;

// reports/schema/differential_report.schema.json
nlohmann::json differential_report_json(const DifferentialReport& report);
void write_differential_markdown(const DifferentialReport& report, std::ostream& out);
// One self-contained page (inline CSS, no scripts): the verdict, the tables and every problem.
void write_differential_html(const DifferentialReport& report, std::ostream& out);
// One test suite per compared schedule, one test case per question.
void write_differential_junit(const DifferentialReport& report, std::ostream& out);

}  // namespace specgate::cli
