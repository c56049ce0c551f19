#pragma once

#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "impl/scoring/sampling_check.h"

namespace specgate {

// The reports of `conformance sampling`: JSON (reports/schema/sampling_report.schema.json),
// Markdown, self-contained HTML with the PIT histogram, and JUnit XML with one case per group.
nlohmann::json sampling_report_json(const SamplingCheckReport& report);
void write_sampling_markdown(const SamplingCheckReport& report, std::ostream& out);
void write_sampling_html(const SamplingCheckReport& report, std::ostream& out);
void write_sampling_junit(const SamplingCheckReport& report, std::ostream& out);

// One line per group and the verdict, as the command prints them.
void write_sampling_summary(const SamplingCheckReport& report, std::ostream& out);

}  // namespace specgate
