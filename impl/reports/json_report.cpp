#include "impl/reports/json_report.h"

#include <nlohmann/json.hpp>

#include "impl/bench/question.h"
#include "impl/reports/input_file_json.h"
#include "impl/common/utf8.h"

namespace specgate {
namespace {

using nlohmann::ordered_json;

template <typename T>
ordered_json or_null(const std::optional<T>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

std::string text_of(const std::vector<int64_t>& code_points) {
  std::string text;
  for (int64_t code_point : code_points) append_utf8(code_point, text);
  return text;
}

// Token ids as a list; code points as the text they spell.
ordered_json symbols_json(Unit unit, const std::vector<int64_t>& symbols) {
  return unit == Unit::kTokenIds ? ordered_json(symbols) : ordered_json(text_of(symbols));
}

ordered_json symbol_text(Unit unit, const std::optional<int64_t>& symbol) {
  if (unit == Unit::kTokenIds || !symbol) return nullptr;
  return text_of({*symbol});
}

ordered_json divergences_json(const DivergenceCounts& counts) {
  return {{"hard", counts.hard}, {"near_tie", counts.near_tie}, {"unattributed", counts.unattributed},
          {"length", counts.length}};
}

ordered_json speed_json(const SpeedSummary& speed) {
  return {{"tokens_per_pass", or_null(speed.tokens_per_pass)},
          {"acceptance", or_null(speed.acceptance)},
          {"reference_tokens_per_second", or_null(speed.reference_tokens_per_second)},
          {"candidate_tokens_per_second", or_null(speed.candidate_tokens_per_second)},
          {"speedup", or_null(speed.speedup)},
          {"reference_run_tokens_per_second", or_null(speed.reference_run_tokens_per_second)},
          {"candidate_run_tokens_per_second", or_null(speed.candidate_run_tokens_per_second)},
          {"run_speedup", or_null(speed.run_speedup)}};
}

ordered_json coverage_json(const Coverage& coverage) {
  const std::optional<std::string> warning = coverage_warning(coverage);
  return {{"answers", coverage.answers},
          {"reporting", coverage.reporting},
          {"batched", coverage.batched},
          {"rounds", coverage.rounds},
          {"drafted", or_null(coverage.drafted)},
          {"accepted", or_null(coverage.accepted)},
          {"ragged_rounds", coverage.known() ? ordered_json(coverage.ragged_rounds) : ordered_json(nullptr)},
          {"realignments", coverage.known() ? ordered_json(coverage.realignments) : ordered_json(nullptr)},
          {"finished_early", coverage.known() ? ordered_json(coverage.finished_early) : ordered_json(nullptr)},
          {"layout_fault_realignments", kLayoutFaultRealignments},
          {"warning", warning ? ordered_json(*warning) : ordered_json(nullptr)}};
}

ordered_json stream_timing_json(const StreamTiming& timing) {
  if (!timing.any()) return nullptr;
  return {{"turns", timing.turns},
          {"chunks", timing.chunks},
          {"median_first_chunk_seconds", or_null(timing.median_first_chunk_seconds())},
          {"median_gap_seconds", or_null(timing.median_gap_seconds())},
          {"counted_chunks", timing.counted_chunks},
          {"tokens", timing.tokens},
          {"chunks_carrying_several", timing.several},
          {"line", stream_timing_line(timing)}};
}

ordered_json run_length_mismatch_json(const std::optional<RunLengthMismatch>& mismatch) {
  if (!mismatch) return nullptr;
  return {{"answers", mismatch->answers},
          {"reference_max_new_tokens", mismatch->reference_max_new_tokens},
          {"candidate_max_new_tokens", mismatch->candidate_max_new_tokens},
          {"other_pairs", mismatch->other_pairs}};
}

ordered_json runs_json(const std::vector<RunSummary>& runs) {
  ordered_json out = ordered_json::array();
  for (const RunSummary& run : runs)
    out.push_back({{"engine", run.engine}, {"server", or_null(run.server)}, {"batch_size", run.batch_size}, {"answers", run.answers},
                   {"tokens", run.tokens}, {"seconds", run.seconds}});
  return out;
}

ordered_json group_json(const GroupSummary& group) {
  return {{"questions", group.questions},       {"exact", group.exact},
          {"missing", group.missing},           {"prompt_mismatches", group.prompt_mismatches},
          {"exact_match", or_null(group.exact_match)},
          {"partial_match", or_null(group.partial_match)}, {"unit", unit_summary(group)},
          {"divergences", divergences_json(group.divergences)}, {"speed", speed_json(group.speed)}};
}

ordered_json groups_json(const std::vector<std::pair<std::string, GroupSummary>>& groups, bool with_subtask) {
  ordered_json out = ordered_json::object();
  for (const auto& [name, group] : groups) {
    out[name] = group_json(group);
    if (with_subtask) out[name]["subtask"] = subtask_of(name);
  }
  return out;
}

ordered_json decoded_context_json(const ItemDivergence& divergence) {
  if (!divergence.text) return nullptr;
  return {{"before", divergence.text->before},
          {"reference", divergence.text->reference_after},
          {"candidate", divergence.text->candidate_after}};
}

ordered_json divergence_json(Unit unit, const ItemDivergence& divergence) {
  const Divergence& d = divergence.where;
  const AttributionResult& a = divergence.attribution;
  ordered_json source = a.source ? ordered_json(std::string(margin_source_name(*a.source))) : ordered_json(nullptr);
  return {{"index", d.index},
          {"turn", d.turn},
          {"index_in_turn", d.index_in_turn},
          {"reference_token", or_null(d.reference_symbol)},
          {"candidate_token", or_null(d.candidate_symbol)},
          {"reference_text", symbol_text(unit, d.reference_symbol)},
          {"candidate_text", symbol_text(unit, d.candidate_symbol)},
          {"attribution", std::string(attribution_name(a.kind))},
          {"near_tie_threshold", or_null(divergence.near_tie_threshold)},
          {"margin", or_null(a.margin)},
          {"margin_is_lower_bound", a.margin_is_lower_bound},
          {"margin_source", source},
          {"reference_logprob", or_null(a.reference_logprob)},
          {"candidate_logprob", or_null(a.candidate_logprob)},
          {"note", a.note},
          {"context",
           {{"before", symbols_json(unit, divergence.before)},
            {"reference", symbols_json(unit, divergence.reference_after)},
            {"candidate", symbols_json(unit, divergence.candidate_after)}}},
          {"decoded_context", decoded_context_json(divergence)}};
}

ordered_json item_json(const ItemResult& item) {
  const Comparison& c = item.comparison;
  const bool compared = !item.missing;
  return {{"question_id", item.question_id},
          {"category", item.category},
          {"subtask", item.subtask},
          {"status", item.missing ? "missing" : item.prompt_mismatch ? "prompt_mismatch" : "compared"},
          {"unit", item.unit ? ordered_json(std::string(unit_name(*item.unit))) : ordered_json(nullptr)},
          {"exact", c.exact},
          {"partial", c.partial},
          {"lcp", c.lcp},
          {"reference_length", c.reference_length},
          {"candidate_length", compared ? ordered_json(c.candidate_length) : ordered_json(nullptr)},
          {"reference_turns", item.reference_turns},
          {"candidate_turns", compared ? ordered_json(item.candidate_turns) : ordered_json(nullptr)},
          {"reference_line", item.reference_line},
          {"candidate_line", or_null(item.candidate_line)},
          {"compared_tokens_per_turn", or_null(item.compared_tokens_per_turn)},
          {"prompt_mismatch", item.prompt_mismatch
                                  ? ordered_json{{"turn", item.prompt_mismatch->turn},
                                                 {"index", item.prompt_mismatch->index},
                                                 {"reference_chat_template", or_null(item.prompt_mismatch->reference_chat_template)},
                                                 {"candidate_chat_template", or_null(item.prompt_mismatch->candidate_chat_template)}}
                                  : ordered_json(nullptr)},
          {"first_divergence", item.divergence ? divergence_json(*item.unit, *item.divergence) : ordered_json(nullptr)}};
}

ordered_json settings_json(const ScoreSettings& settings) {
  ordered_json rescore = nullptr;
  if (settings.rescore_with)
    rescore = {{"path", settings.rescore_with->string()}, {"dtype", settings.rescore_dtype}, {"device", settings.rescore_device},
               {"chat_template", settings.rescore_chat_template}};
  if (settings.rescore_endpoint)
    rescore = {{"endpoint", *settings.rescore_endpoint}, {"api", settings.rescore_api}, {"top_k", settings.rescore_top_k},
               {"dtype", settings.rescore_dtype}};
  const bool all_turns = settings.turns == TurnScope::kAll;
  return {
      {"turns", all_turns ? "all" : "first"},
      {"turn_rule", all_turns ? "every turn of choices[0] is scored, in order, as one sequence; turn t is compared with turn t, "
                                "so symbols never match across a turn boundary"
                              : "only the first turn of choices[0] is scored"},
      {"unit_rule", "token_ids when both answers of a question have them, else the Unicode code points of the text"},
      {"partial_rule", "lcp / reference_length; 1 when both are empty, 0 when only the reference is; a candidate that "
                       "runs past the reference scores 1 without being exact"},
      {"near_tie_threshold", settings.near_tie_threshold},
      {"near_tie_by_dtype", settings.near_tie_by_dtype},
      {"speed_rule", "per side, tokens/s is what one request sees: the mean over compared questions of new_tokens / "
                     "wall_time (new_tokens defaults to the length of token_ids); run tokens/s (overall only) is what "
                     "the system delivers: the compared answers' tokens over their runs' wall time, each run from its "
                     "started_at to its last answer's tstamp; the candidate's tokens per target pass is the mean of "
                     "accept_lengths, else new_tokens / decoding_steps, pooled; acceptance is accepted_drafts / "
                     "drafted_tokens, pooled; speedup and run_speedup are the candidate's over the reference's; "
                     "--min-speedup gates run_speedup where both sides record their runs, else speedup; null when the "
                     "answers do not carry what a number needs"},
      {"attribution_rule", "margin = logprob(reference token) - logprob(candidate token) under the reference model at the "
                           "first divergence: from the reference answer's top_logprobs when both tokens are there, else "
                           "from --rescore-with, else a lower bound from top_logprobs when only the reference token is "
                           "there; near_tie when |margin| <= the divergence's near_tie_threshold, hard otherwise: "
                           "settings.near_tie_threshold or, with near_tie_by_dtype, the sum of what rounding in each "
                           "answer's run.dtype and in the re-scorer's dtype can move the two most likely tokens' "
                           "difference when that is larger (bfloat16 and float16 widen it); the candidate's own "
                           "log-probabilities are never used"},
      {"rescore_with", rescore},
      {"eos_ids", settings.eos_ids},
      {"eos_rule", "where one answer's turn is the other's plus a trailing id among eos_ids, that id is not compared "
                   "(engines differ on keeping the EOS that stopped them); no id is forgiven when eos_ids is empty"},
      {"gate",
       {{"min_exact", settings.gate.min_exact},
        {"min_partial", settings.gate.min_partial},
        {"max_hard_divergences", or_null(settings.gate.max_hard_divergences)},
        {"min_tokens_per_pass", or_null(settings.gate.min_tokens_per_pass)},
        {"min_speedup", or_null(settings.gate.min_speedup)},
        {"min_coverage", or_null(settings.gate.min_coverage)},
        {"fails_on_id_problems", true}}}};
}

}  // namespace

ordered_json score_report_json(const ScoreReport& report) {
  ordered_json items = ordered_json::array();
  for (const ItemResult& item : report.items) items.push_back(item_json(item));
  const GroupSummary& overall = report.overall;
  return {
      {"schema_version", kScoreReportSchemaVersion},
      {"tool", "specgate conformance score"},
      {"generated_at", report.generated_at},
      {"inputs",
       {{"reference", input_file_json<ordered_json>(report.reference, "answers")},
        {"candidate", input_file_json<ordered_json>(report.candidate, "answers")},
        {"bench", report.bench ? input_file_json<ordered_json>(*report.bench, "questions") : ordered_json(nullptr)}}},
      {"settings", settings_json(report.settings)},
      {"summary",
       {{"questions", overall.questions},
        {"compared", overall.questions - overall.missing},
        {"exact", overall.exact},
        {"exact_match", or_null(overall.exact_match)},
        {"partial_match", or_null(overall.partial_match)},
        {"unit", unit_summary(overall)},
        {"divergences", divergences_json(overall.divergences)},
        {"speed", speed_json(overall.speed)},
        {"missing", report.missing_ids.size()},
        {"unexpected", report.unexpected_ids.size()},
        {"prompt_mismatches", report.prompt_mismatch_ids.size()},
        {"run_length_mismatch", run_length_mismatch_json(report.run_length_mismatch)},
        {"coverage", coverage_json(report.candidate_coverage)},
        {"streams", {{"reference", stream_timing_json(report.reference_streams)},
                     {"candidate", stream_timing_json(report.candidate_streams)}}},
        {"ended_with_eos", {{"reference", report.reference_ended_with_eos}, {"candidate", report.candidate_ended_with_eos}}},
        {"rescored_prompts",
         {{"from_answer_prompt_token_ids", report.rescored_from_answer_prompts},
          {"from_chat_template", report.rescored_from_template}}}}},
      {"by_subtask", groups_json(report.by_subtask, false)},
      {"by_category", groups_json(report.by_category, true)},
      {"items", items},
      {"missing_ids", report.missing_ids},
      {"unexpected_ids", report.unexpected_ids},
      {"prompt_mismatch_ids", report.prompt_mismatch_ids},
      {"runs", {{"reference", runs_json(report.reference_runs)}, {"candidate", runs_json(report.candidate_runs)}}},
      {"gate", {{"passed", report.gate.passed}, {"reasons", report.gate.reasons}}}};
}

}  // namespace specgate
