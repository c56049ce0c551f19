#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impl/scoring/answer_reader.h"
#include "impl/scoring/attribution.h"
#include "impl/scoring/coverage.h"
#include "impl/scoring/stream_timing.h"
#include "impl/scoring/input_file.h"
#include "impl/scoring/metrics.h"

namespace specgate {

// What a question's answers were compared in (DESIGN.md section 4).
enum class Unit { kTokenIds, kCodePoints };
std::string_view unit_name(Unit unit);  // token_ids, code_points

inline constexpr int kScoreReportSchemaVersion = 5;

struct GateSettings {
  double min_exact = 1.0;    // fraction of questions answered exactly
  double min_partial = 0.0;  // mean partial match
  std::optional<int64_t> max_hard_divergences;
  std::optional<double> min_tokens_per_pass;  // the candidate's, overall
  std::optional<double> min_speedup;          // run_speedup where both sides record runs, else speedup
  std::optional<int64_t> min_coverage;        // the candidate's realignments, summed over its answers
};

struct ScoreSettings {
  TurnScope turns = TurnScope::kAll;
  double near_tie_threshold = 0.1;  // nats
  // Widen it, per question, to what the rounding of both answers' run.dtype can flip
  // (near_tie_threshold()); off when the user fixed the threshold.
  bool near_tie_by_dtype = true;
  GateSettings gate;
  std::optional<std::filesystem::path> rescore_with;
  // What the re-scorer computes in (with rescore_with or rescore_endpoint; empty without one): its
  // rounding widens the near-tie threshold as the answers' does.
  std::string rescore_dtype;
  std::string rescore_device, rescore_chat_template;  // meaningful with rescore_with
  // Or the reference engine that re-scores through its prompt log-probabilities of the top k.
  std::optional<std::string> rescore_endpoint;
  std::string rescore_api;
  int64_t rescore_top_k = 0;
  // A turn's trailing id among these is not compared (engines differ on keeping it); empty
  // when the EOS ids are not known.
  std::vector<int64_t> eos_ids;
};

struct ItemDivergence {
  Divergence where;
  AttributionResult attribution;
  std::optional<double> near_tie_threshold;  // nats, the one it was attributed against; none for length
  // Up to a few symbols each: the common ones just before the divergence, then each side's
  // from the divergence on.
  std::vector<int64_t> before, reference_after, candidate_after;
  // The same decoded by the tokenizer, when scoring has one and the unit is token ids.
  struct Text {
    std::string before, reference_after, candidate_after;
  };
  std::optional<Text> text;
};

// One reference question.
// Where two answers' prompts first differ: the turn, and the token of its prompt_token_ids.
struct PromptMismatch {
  int64_t turn = 0;
  int64_t index = 0;
  std::optional<std::string> reference_chat_template, candidate_chat_template;  // where the answers name them
};

struct ItemResult {
  int64_t question_id = 0;
  std::string category, subtask;
  bool missing = false;  // no answer in the candidate: not exact, partial 0
  std::optional<Unit> unit;
  Comparison comparison;
  int64_t reference_turns = 0, candidate_turns = 0;
  int64_t reference_line = 0;
  std::optional<int64_t> candidate_line;
  std::optional<ItemDivergence> divergence;
  // The answers were generated from different prompts (another chat template or tokenizer):
  // not compared, not exact, partial 0, no divergence.
  std::optional<PromptMismatch> prompt_mismatch;
  // The two runs had different max_new_tokens: each turn compared up to the smaller, and no turn
  // after the first one that reached it (the later prompts hold answers of different lengths).
  std::optional<int64_t> compared_tokens_per_turn;
  AnswerSpeed reference_speed, candidate_speed;  // compared questions only
};

struct DivergenceCounts {
  int64_t hard = 0, near_tie = 0, unattributed = 0, length = 0;
};

// Speed over a group's compared questions, as Spec-Bench's speed.py reads answers; a number the
// answers cannot give is absent, never 0.
struct SpeedSummary {
  // The candidate's tokens per target pass: accept_lengths' mean where answers have them (with
  // round_drafts, the passes left out counted as one token each), else new_tokens /
  // decoding_steps, pooled over the questions.
  std::optional<double> tokens_per_pass;
  std::optional<double> acceptance;  // the candidate's accepted_drafts / drafted_tokens, pooled
  // Each side's mean over questions of new_tokens / wall_time.
  std::optional<double> reference_tokens_per_second, candidate_tokens_per_second;
  std::optional<double> speedup;  // candidate_tokens_per_second / reference_tokens_per_second
  // Overall only: each side's tokens over its runs' wall time, what the system delivers (with
  // batching, far more than one request sees); absent unless every compared answer records its
  // run and tstamp.
  std::optional<double> reference_run_tokens_per_second, candidate_run_tokens_per_second;
  std::optional<double> run_speedup;
  bool any() const {
    return tokens_per_pass || acceptance || reference_tokens_per_second || candidate_tokens_per_second;
  }
};

// Means over the questions of a group; missing answers count as 0.
struct GroupSummary {
  int64_t questions = 0, exact = 0, missing = 0, prompt_mismatches = 0;
  // Over the questions compared or missing, not those answered from different prompts; none
  // when every question was.
  std::optional<double> exact_match, partial_match;
  DivergenceCounts divergences;
  int64_t token_id_items = 0, code_point_items = 0;
  SpeedSummary speed;
};

// The answers of one run on one side (RunInfo): how many, their tokens, and the run's wall time
// from its start to its last answer's tstamp.
struct RunSummary {
  std::string engine;
  std::optional<std::string> server;  // what served collected answers, where they say
  int64_t batch_size = 1;
  int64_t answers = 0, tokens = 0;
  double seconds = 0.0;
};

// Compared answers whose two runs had different max_new_tokens, and the first such pair.
struct RunLengthMismatch {
  int64_t answers = 0;
  int64_t reference_max_new_tokens = 0, candidate_max_new_tokens = 0;
  bool other_pairs = false;  // some answers had another pair
};

struct GateResult {
  bool passed = true;
  std::vector<std::string> reasons;  // one per failed condition
};

struct ScoreReport {
  std::string generated_at;  // UTC, ISO 8601
  InputFile reference, candidate;
  std::optional<InputFile> bench;
  ScoreSettings settings;
  GroupSummary overall;
  std::vector<std::pair<std::string, GroupSummary>> by_subtask, by_category;  // in the order of items
  std::vector<ItemResult> items;                                                // by question id
  std::vector<int64_t> missing_ids;     // in the reference, not in the candidate
  std::vector<int64_t> unexpected_ids;  // in the candidate, not in the reference
  std::vector<int64_t> prompt_mismatch_ids;  // answered from different prompts on the two sides
  std::optional<RunLengthMismatch> run_length_mismatch;
  std::vector<RunSummary> reference_runs, candidate_runs;  // the runs the compared answers came from
  Coverage candidate_coverage;  // over the compared answers
  StreamTiming reference_streams, candidate_streams;  // over the compared answers read from streams
  // Answers whose last turn's token ids end with one of settings.eos_ids, on each side.
  int64_t reference_ended_with_eos = 0, candidate_ended_with_eos = 0;
  // Where re-scored prompts came from: the reference answer's prompt_token_ids, or the bench
  // question through the re-scoring checkpoint's tokenizer and template.
  int64_t rescored_from_answer_prompts = 0, rescored_from_template = 0;
  GateResult gate;
};

// token_ids, code_points, mixed, or none when nothing was compared.
std::string unit_summary(const GroupSummary& summary);

// Fills overall, by_subtask and by_category from the items.
void summarize(ScoreReport& report);

// The gate: exact match >= min_exact, partial match >= min_partial, hard divergences <=
// max_hard_divergences, tokens per pass >= min_tokens_per_pass and speedup >= min_speedup
// (each failing when it cannot be computed), realignments >= min_coverage (failing when the
// answers do not count them), and no missing or unexpected question ids.
GateResult evaluate_gate(const ScoreReport& report);

}  // namespace specgate
