#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "impl/decoding/ngram_lookup.h"
#include "impl/sampling/sampling.h"
#include "impl/scoring/answer_reader.h"
#include "impl/scoring/input_file.h"
#include "impl/scoring/speculation_counters.h"
#include "impl/scoring/support_margin.h"
#include "impl/statistics/bernoulli_sum.h"

namespace specgate {

class Rescorer;

// A greedy round whose accepted drafts differ from what the draft checkpoint proposes on the
// answer's own tokens.
// A token drawn after a rejected draft that is the rejected draft itself: where the drafter
// proposes one token with certainty (n-gram lookups, a greedy draft model), the residual
// max(p - q, 0) the token is drawn from is 0 there.
struct RecoveredDraft {
  std::string file;
  int64_t line = 0;
  int64_t question_id = 0;
  int64_t turn = 0;      // 0-based
  int64_t position = 0;  // 0-based within the turn
  int64_t token = 0;
};

struct RoundMismatch {
  std::string file;
  int64_t line = 0;
  int64_t question_id = 0;
  int64_t turn = 0;      // 0-based
  int64_t round = 0;     // 0-based, the entry of the turn's accept_lengths
  int64_t position = 0;  // the round's first generated token, 0-based within the turn
  int64_t predicted = 0, observed = 0;  // drafts accepted
};

// One draft position (0-based within its round), over every round compared: the rounds that
// reached it before their answer's final token, the drafts accepted there that the models imply
// (the sum of those trials' probabilities), and the drafts accepted there that the answers show:
// at least `shown`, at most `shown + open`, where a turn's last round may have kept drafts past
// its final token. `counted`: the server's own count (--server-counters).
struct DraftPosition {
  int64_t reached = 0;
  double implied = 0.0;
  int64_t shown = 0, open = 0;
  std::optional<int64_t> counted;
};

// Sampled with a draft model: every token drawn after a rejected draft before its answer's final
// token, placed by its randomised PIT in the residual max(p - q, 0) it is drawn from (given that
// it is no EOS id), tested for uniformity (Kolmogorov-Smirnov). The PIT's uniforms come from a
// seed derived from the answers (derived_pit_seed). A token outside the residual, which only
// rounding lets a correct engine draw, is counted and left out. With a re-scoring in the engine's
// dtype, D is allowed kRoundingShiftTolerance times the largest mean shift of the PIT's law that
// re-scoring measures (pit_law_shift).
struct ResidualTest {
  int64_t draws = 0;    // tokens tested
  int64_t outside = 0;  // tokens outside the re-scorer's residual
  double distance = 0.0;
  double rounding_shift = 0.0, allowance = 0.0;
  double p_value = 1.0;
  double alpha = 0.0;  // its share of the check's alpha
  bool rejected = false;
};

struct AcceptanceCheckRequest {
  std::vector<std::filesystem::path> answers;
  const Rescorer* target = nullptr;
  const Rescorer* draft = nullptr;    // the engine's draft checkpoint; null with `ngram`
  std::optional<NgramOptions> ngram;  // an n-gram engine: its drafts are looked up in the answer itself
  // The draft model proposes its most likely tokens rather than sampling them (vLLM's default
  // draft_sample_method, greedy): a sampled round accepts a draft x with probability p(x).
  bool greedy_drafts = false;
  std::optional<SamplingParams> sampling;  // nullopt: every answer's run.sampling
  std::optional<int64_t> draft_tokens;     // K; nullopt: every answer's run.draft_tokens
  double alpha = 0.05;
  // Greedy: a draft position where the draft's two most likely tokens, or its choice and the
  // answer's token, lie within this many nats of each other may go either way in an engine
  // whose numerics differ from the re-scorer's (as `score` treats divergences); where
  // `near_tie_by_dtype` holds, widened per answer as score's by its run.dtype and the re-scorer's.
  double near_tie_threshold = 0.1;
  bool near_tie_by_dtype = true;
  // What the re-scorer (target and draft) computes in: float64, float32, bfloat16 or float16.
  std::string rescorer_dtype = "float64";
  // Sampled: the engine's dtype, which sizes the support margin (nullopt: the answers' run.dtype),
  // or the margin itself (resolve_support_margin).
  std::optional<std::string> engine_dtype;
  std::optional<double> support_margin;
  // The target and draft checkpoints in the engine's dtype, where that is not the re-scorer's:
  // sampled, what a correct engine of that dtype accepts, whose rounding moves sum min(p, q) (a
  // draft and a target rounded apart overlap less). nullptr: no such re-scoring; the draft's is
  // null with `ngram`.
  const Rescorer* target_in_engine_dtype = nullptr;
  const Rescorer* draft_in_engine_dtype = nullptr;
  // The server's counters over the run that wrote the answers (collect --counters): each draft
  // position's accepted count is held to what the answers show. Answers without rounds then have
  // them implied by their tokens, where the drafter proposes with certainty.
  std::optional<SpeculationCounters> server_counters;
  AnswerProgress progress;
};

struct AcceptanceCheckReport {
  std::string generated_at;     // UTC, ISO 8601
  SamplingParams sampling;      // seed unused
  std::string sampling_source;  // "answers" or "flags"
  int64_t draft_tokens = 0;
  std::string drafter;  // "model", "model (greedy drafts)", or "ngram" with its sizes
  double alpha = 0.05;
  std::vector<InputFile> files;
  int64_t answers = 0;
  int64_t rounds = 0;  // rounds compared with the models
  // Each turn's last round, counted up to the answer's final token only: EOS or max_new_tokens
  // may have cut it short, so the final token may be an accepted draft or the target's own.
  int64_t last_rounds_cut = 0;
  // Turns whose rounds append every token, the first included: their first entry may be the
  // prefill's pass rather than a round of drafts, and is left out whatever it appended.
  int64_t first_rounds_skipped = 0;
  // Turns without rounds of their own, whose rounds their tokens imply (with server_counters):
  // after the prefill's token, each round keeps its proposal's longest prefix that the answer
  // continues with, and one token more.
  int64_t implied_turns = 0;
  // Turns whose final token's trial the engine's own accepted_drafts decides (the answer stopped
  // at max_new_tokens within a round whose drafts the answer lists, past the final token).
  int64_t final_trials = 0;
  int64_t near_tie_rounds = 0;  // greedy: rounds that agree only through a near-tie
  double near_tie_threshold = 0.1;  // the widest an answer was judged with
  // Sampled: trials whose outcome the re-scorer rules out (acceptance probability 0 or 1) but
  // an engine within the support margin could have (a support that grows within it).
  int64_t boundary_trials = 0;
  std::optional<SupportMargin> margin;  // sampled answers only
  // Every drafted position a round reached, with the probability its draft is accepted: 0 or 1
  // under greedy decoding (the draft's most likely token is the answer's), sum over x of
  // min(p(x), q(x)) when sampled. With a re-scoring in the engine's dtype, the expected count may
  // move in the direction that re-scoring moves it, kRoundingShiftTolerance times as far
  // (test.allowed_shift).
  BernoulliSumTest test;
  // Sampled, with a re-scoring in the engine's dtype: the drafts that re-scoring expects accepted
  // less what the re-scorer expects, over the same trials.
  std::optional<double> rounding_shift;
  // Sampled with a draft model: the tokens drawn after rejected drafts. The count test and this
  // one then share alpha, half each (test.alpha and residual.alpha).
  std::optional<ResidualTest> residual;
  std::vector<RoundMismatch> mismatches;  // greedy only: every round that differs
  std::vector<RecoveredDraft> recovered_drafts;  // sampled, drafts proposed with certainty: every one
  std::vector<DraftPosition> positions;          // by draft position, 0 to K - 1
  std::optional<SpeculationCounters> server_counters;
  int64_t rounds_with_drafts = 0;  // rounds compared that drafted a token, as vLLM counts its drafts
  bool rejected = false;
  std::vector<std::string> reasons;  // why it was rejected, one line each
};

// Compares a speculative engine's accepted drafts with what its target and draft checkpoints
// imply, from each answer's per-round accept_lengths (tokens appended per target pass: the
// accepted drafts and one more) and its token_ids and prompt_token_ids. The engine is taken to
// draft K tokens every round; the tokens before its first round (the prefill's, at most one)
// are the answer's length less the sum of its accept_lengths. Every drafted position a round
// reached before the answer's final token is a trial: cutting at a token position, not at a
// round, keeps the count unbiased by how the answer stopped (the round that ends an answer is
// likelier to be a long one). Under greedy decoding the draft's most likely tokens on the
// answer's prefixes fix every round's accepted count, near-ties aside: a round that differs
// rejects. When sampled, a round reaching drafted position i accepts it with probability
// sum_x min(p, q) at the answer's prefix there (the accepted drafts are the answer's tokens),
// given that the token there is not EOS (it was not the final one); the accepted count is tested
// against the sum of those (BernoulliSumTest at alpha). An outcome the models rule out rejects on
// its own unless a support within the engine's margin allows it, and so does a token drawn after
// a rejected draft proposed with certainty that is that draft. An n-gram engine's drafts are
// the answer's own lookups (ngram_proposal on the prompt and the tokens before each round, up
// to what the turn could keep before run.max_new_tokens): greedy, each round accepts exactly its
// proposal's prefix that the answer continues with; sampled, a proposed token x is accepted with
// probability p(x). A model engine with greedy_drafts is judged as an n-gram one, its proposals
// the draft's most likely tokens on the answer's prefixes. Where the answer records each round's
// drafts (round_drafts) a round is held to those, not to K; a server that lists only its passes
// with drafts (vLLM) leaves the n-gram engine's passes without any unlisted, and they are put
// back where the lookup finds nothing. With server counters, each draft position's accepted count
// must lie within what the answers show there; answers without rounds then get the rounds their
// tokens imply, which only a drafter that proposes with certainty fixes (a correct engine never
// draws a rejected certain draft again). Throws InputError naming the file, line and field for answers without token_ids,
// prompt_token_ids or per-turn accept_lengths, accept_lengths that do not add up to the
// answer, a round accepting more than K, or missing or disagreeing settings.
AcceptanceCheckReport check_acceptance(const AcceptanceCheckRequest& request);

}  // namespace specgate
