#include "impl/scoring/support_margin.h"

#include <cmath>
#include <map>

#include "impl/common/error.h"
#include "impl/common/short_number.h"

namespace specgate {

std::optional<double> support_margin_for(const std::string& dtype) {
  // Twice the largest spread of the top tokens' logits against float64 measured on
  // SmolLM2-135M-Instruct: bfloat16 1.98, float16 0.125; float32's 1e-4 on the CPU is raised to
  // 0.01 for kernels that sum in another order.
  static const std::map<std::string, double> margins = {
      {"float64", 1e-6}, {"float32", 0.01}, {"bfloat16", 4.0}, {"float16", 0.25}};
  const auto found = margins.find(dtype);
  return found == margins.end() ? std::nullopt : std::optional(found->second);
}

SupportMargin resolve_support_margin(const std::optional<std::string>& engine_dtype,
                                     const std::optional<double>& support_margin,
                                     std::span<const std::filesystem::path> answer_files, TurnScope turns) {
  constexpr const char* kNames = "float64, float32, bfloat16 or float16";
  if (support_margin) {
    if (!(*support_margin >= 0.0) || !std::isfinite(*support_margin))
      throw InputError("--support-margin: must be a finite number of logits >= 0, got " + short_number(*support_margin));
    return {engine_dtype.value_or(""), "flag", *support_margin};
  }
  if (engine_dtype) {
    const std::optional<double> margin = support_margin_for(*engine_dtype);
    if (!margin) throw InputError("--engine-dtype: expected " + std::string(kNames) + ", got '" + *engine_dtype + "'");
    return {*engine_dtype, "flag", *margin};
  }
  SupportMargin widest{.engine_dtype = "", .source = "answers", .logits = -1.0};
  for (const std::filesystem::path& file : answer_files) {
    AnswerReader reader(file, turns);
    while (const std::optional<AnswerRecord> record = reader.next()) {
      const std::string at = answer_location(file, record->line);
      if (!record->speed.run || !record->speed.run->dtype)
        throw InputError("--engine-dtype: " + at + " records no run.dtype; give the engine's floating-point type (" +
                         kNames + "), which sizes the support margin");
      const std::string& dtype = *record->speed.run->dtype;
      const std::optional<double> margin = support_margin_for(dtype);
      if (!margin) throw InputError(at + ": field 'run.dtype': '" + dtype + "' is not " + kNames);
      if (*margin > widest.logits) widest = {dtype, "answers", *margin};
    }
  }
  if (widest.logits < 0.0) throw InputError("--engine-dtype: no answers to take it from");
  return widest;
}

}  // namespace specgate
