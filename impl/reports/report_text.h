#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/common/short_number.h"
#include "impl/scoring/score_report.h"

namespace specgate {

// Plain-text pieces the JUnit, Markdown and HTML reports share.

// 0.9166 -> "91.7%".
std::string percent(double fraction);
// A speed figure with `digits` significant digits and `suffix` ("2.41x"), or "–" when the
// answers could not give it.
std::string optional_figure(const std::optional<double>& value, const std::string& suffix = "", int digits = 3);
// percent(), or "–" when absent.
std::string optional_percent(const std::optional<double>& fraction);
// Whether any group of the report has a speed figure.
bool has_speed(const ScoreReport& report);
// One symbol: a token id ("1234"), a quoted character ("'é'", with \n, \t and other control
// characters spelled out), or "(end)" where that side had ended.
std::string symbol_label(Unit unit, const std::optional<int64_t>& symbol);
// A run of symbols: "1 2 3" for token ids, the text (control characters spelled out) for
// code points.
std::string symbols_label(Unit unit, const std::vector<int64_t>& symbols);
// Decoded text with control characters spelled out as symbols_label() spells them; bytes that
// are not UTF-8 (a token may end inside a character) become U+FFFD.
std::string visible_text(std::string_view text);
// How many answers ended with an EOS id on each side, and which ids; empty when none are known.
std::string eos_summary(const ScoreReport& report);

// "run lengths differ: ..." where the two sides' runs had different max_new_tokens; else empty.
std::string run_length_summary(const ScoreReport& report);

// The coverage line, none when the answers say nothing of speculation or batching, and the
// warning where the run could not have caught the layout faults (coverage.h).
struct CoverageText {
  std::optional<std::string> line, warning;
};
CoverageText coverage_text(const Coverage& coverage);

// "stream (candidate): 30 streamed turns: ..." for each side whose answers were read from streams.
std::vector<std::string> stream_lines(const ScoreReport& report);

// "near-tie threshold widened ..." where the answers' dtypes widened it for some divergence; else empty.
std::string near_tie_summary(const ScoreReport& report);
// "hard, margin 3.21 nats (top_logprobs)", "near-tie, margin >= 0.05 nats (...)", "length:
// ...", "unattributed: ...".
std::string attribution_label(const AttributionResult& attribution);
// The first divergence of a question in one line; for a missing answer, says so.
// "run throughput: reference 467 tokens/s (oracle, batch 1), candidate 1099 tokens/s (eqspec, batch
// 4), speedup 2.35x", what the system delivered on each side; "" when the answers record no runs.
std::string run_throughput_line(const ScoreReport& report);

// "answered from a different prompt (prompt_token_ids differ at turn T, token I): not compared".
std::string prompt_mismatch_label(const PromptMismatch& mismatch);
std::string divergence_summary(const ItemResult& item);
// "specgate score: PASSED" or "... FAILED".
std::string verdict(const GateResult& gate);

}  // namespace specgate
