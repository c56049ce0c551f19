#pragma once

#include <nlohmann/json_fwd.hpp>

#include "impl/scoring/score_report.h"

namespace specgate {

// The report as JSON, following reports/schema/score_report.schema.json.
nlohmann::ordered_json score_report_json(const ScoreReport& report);

}  // namespace specgate
