#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "impl/scoring/answer_reader.h"

namespace specgate {

// How far a token may lie outside the re-scorer's support and still count as drawn by a correct
// engine, per warper (within_support_margin): top-k and min-p compare logits, so raising the
// token's logit (before the temperature) by `logits` must bring it in; top-p compares the mass
// ahead of the token, which must lie under top_p plus `mass`. Sized from the engine's
// floating-point type, whose logits differ from float64's by rounding, and the re-scorer's when
// it computes in less than float64.
struct SupportMargin {
  std::string engine_dtype;  // float64, float32, bfloat16 or float16; empty when only the margin was given
  std::string source;        // "flag" or "answers" (their run.dtype)
  std::string rescorer_dtype = "float64";
  double logits = 0.0;
  double mass = 0.0;
};

// The margins for an engine computing in `dtype`: twice the largest change, that dtype against
// float64, of a difference between two of the most likely tokens' logits, and of the cumulative
// mass of the tokens in float64's order, measured on the real model
// (reports/sampling/support_margin.md). nullopt for another name.
std::optional<SupportMargin> support_margin_for(const std::string& dtype);

// The widest margins the answers' run.dtype records; nullopt when some answer records none and
// `required` is false. Throws InputError naming the file, line and field for an unknown dtype,
// and, when `required`, for an answer without one.
std::optional<SupportMargin> answers_margin(std::span<const std::filesystem::path> answer_files, TurnScope turns,
                                            bool required);

// The margin between the engine and a re-scorer computing in `rescorer_dtype`:
// `support_margin` (logits) and `support_mass_margin` when given, else `engine_dtype`'s, else the
// widest of those the answers' run.dtype records (every answer must record one), each widened by
// the re-scorer dtype's own margin unless that is float64 (the engine's margin is measured
// against float64). A margin given alone keeps the dtype's other one, or 0 where no dtype is
// known. Throws InputError naming the flag, or the file, line and field, for an unknown dtype, a
// negative or infinite margin, or answers that record no dtype where no flag gives one.
SupportMargin resolve_support_margin(const std::optional<std::string>& engine_dtype,
                                     const std::optional<double>& support_margin,
                                     const std::optional<double>& support_mass_margin, const std::string& rescorer_dtype,
                                     std::span<const std::filesystem::path> answer_files, TurnScope turns);

}  // namespace specgate
