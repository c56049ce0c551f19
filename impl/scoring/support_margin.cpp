#include "impl/scoring/support_margin.h"

#include <cmath>
#include <map>

#include "impl/common/error.h"
#include "impl/common/short_number.h"

namespace specgate {

namespace {

constexpr const char* kNames = "float64, float32, bfloat16 or float16";

}  // namespace

std::optional<SupportMargin> answers_margin(std::span<const std::filesystem::path> answer_files, TurnScope turns,
                                            bool required) {
  std::optional<SupportMargin> widest;
  for (const std::filesystem::path& file : answer_files) {
    AnswerReader reader(file, turns);
    while (const std::optional<AnswerRecord> record = reader.next()) {
      const std::string at = answer_location(file, record->line);
      if (!record->speed.run || !record->speed.run->dtype) {
        if (!required) return std::nullopt;
        throw InputError("--engine-dtype: " + at + " records no run.dtype; give the engine's floating-point type (" +
                         kNames + "), which sizes the support margin");
      }
      const std::string& dtype = *record->speed.run->dtype;
      std::optional<SupportMargin> margin = support_margin_for(dtype);
      if (!margin) throw InputError(at + ": field 'run.dtype': '" + dtype + "' is not " + kNames);
      if (!widest || margin->logits > widest->logits) {
        margin->source = "answers";
        widest = margin;
      }
    }
  }
  if (!widest && required) throw InputError("--engine-dtype: no answers to take it from");
  return widest;
}

namespace {

void check_given(const std::optional<double>& margin, const std::string& flag, const std::string& range, double largest) {
  if (margin && !(*margin >= 0.0 && *margin <= largest && std::isfinite(*margin)))
    throw InputError(flag + ": must be " + range + ", got " + short_number(*margin));
}

}  // namespace

std::optional<SupportMargin> support_margin_for(const std::string& dtype) {
  // SmolLM2-135M-Instruct against float64 on the CPU, twice the largest change: of logit
  // differences bfloat16 1.98, float16 0.125 (float32's 1e-4 raised to 0.01 for kernels that
  // sum in another order); of the cumulative mass in float64's order at temperatures 0.8 and 1,
  // bfloat16 0.059, float16 0.0099 (float32's 7.5e-6 raised to 1e-3).
  static const std::map<std::string, std::pair<double, double>> margins = {
      {"float64", {1e-6, 1e-9}}, {"float32", {0.01, 1e-3}}, {"bfloat16", {4.0, 0.12}}, {"float16", {0.25, 0.02}}};
  const auto found = margins.find(dtype);
  if (found == margins.end()) return std::nullopt;
  return SupportMargin{.engine_dtype = dtype, .source = "flag", .logits = found->second.first, .mass = found->second.second};
}

SupportMargin resolve_support_margin(const std::optional<std::string>& engine_dtype,
                                     const std::optional<double>& support_margin,
                                     const std::optional<double>& support_mass_margin, const std::string& rescorer_dtype,
                                     std::span<const std::filesystem::path> answer_files, TurnScope turns) {
  check_given(support_margin, "--support-margin", "a finite number of logits >= 0", HUGE_VAL);
  check_given(support_mass_margin, "--support-mass-margin", "a mass in [0, 1]", 1.0);
  const std::optional<SupportMargin> rescorer = support_margin_for(rescorer_dtype);
  if (!rescorer) throw InputError("the re-scorer's dtype: expected " + std::string(kNames) + ", got '" + rescorer_dtype + "'");
  std::optional<SupportMargin> margin;
  if (engine_dtype) {
    margin = support_margin_for(*engine_dtype);
    if (!margin) throw InputError("--engine-dtype: expected " + std::string(kNames) + ", got '" + *engine_dtype + "'");
  } else {
    margin = answers_margin(answer_files, turns, /*required=*/!support_margin && !support_mass_margin);
  }
  SupportMargin resolved = margin.value_or(SupportMargin{.engine_dtype = "", .source = "flag"});
  if (margin && rescorer_dtype != "float64") {
    resolved.logits += rescorer->logits;
    resolved.mass += rescorer->mass;
  }
  resolved.rescorer_dtype = rescorer_dtype;
  if (support_margin) resolved.logits = *support_margin;
  if (support_mass_margin) resolved.mass = *support_mass_margin;
  if (support_margin || support_mass_margin) resolved.source = "flag";
  return resolved;
}

}  // namespace specgate
