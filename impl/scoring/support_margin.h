#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "impl/scoring/answer_reader.h"

namespace specgate {

// How far a token may lie outside the re-scorer's support and still count as drawn by a correct
// engine: the margin (in logits before the temperature) by which raising the token's logit
// against the tokens ahead of it must bring it into the support. Sized from the engine's
// floating-point type: its logits differ from the float64 re-scorer's by rounding.
struct SupportMargin {
  std::string engine_dtype;  // float64, float32, bfloat16 or float16; empty when only the margin was given
  std::string source;        // "flag" or "answers" (their run.dtype)
  double logits = 0.0;
};

// The margin for an engine computing in `dtype`: twice the largest change of a difference
// between two of the most likely tokens' logits, that dtype against float64, measured on the real
// model (reports/sampling/support_margin.md). nullopt for another name.
std::optional<double> support_margin_for(const std::string& dtype);

// The engine's margin: `support_margin` when given, else `engine_dtype`'s, else the largest of
// those the answers' run.dtype records (every answer must record one). Throws InputError naming
// the flag, or the file, line and field, for an unknown dtype, a negative or infinite margin, or
// answers that record no dtype where no flag gives one.
SupportMargin resolve_support_margin(const std::optional<std::string>& engine_dtype,
                                     const std::optional<double>& support_margin,
                                     std::span<const std::filesystem::path> answer_files, TurnScope turns);

}  // namespace specgate
