#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/common/token_logprob.h"

namespace specgate {

// One turn of an answer as Spec-Bench records it, with specgate's token-level extension. An
// optional figure is written only when every turn of the answer has it.
// How a streamed answer came: per chunk that carried text or tokens, when it arrived (seconds
// after the request was sent) and, where the server gives ids, how many tokens it carried.
struct StreamRecord {
  std::vector<double> chunk_seconds;
  std::vector<int64_t> chunk_tokens;  // empty where the server gives no ids
};

struct AnswerTurn {
  std::string text;
  std::vector<int64_t> token_ids;
  std::vector<int64_t> prompt_token_ids;  // the ids the engine was fed; empty when unknown
  std::optional<int64_t> new_tokens;      // defaults to the length of token_ids
  std::optional<int64_t> decoding_steps;  // target passes
  double wall_time = 0.0;
  std::vector<int64_t> accept_lengths;                       // one per decoding step, speculative engines
  // Per entry of accept_lengths, the drafts that step verified, where the engine reports them (a
  // server that lists only its passes with drafts: the turn's other tokens came one a pass; an
  // empty list where it verified none).
  std::optional<std::vector<int64_t>> round_drafts;
  std::optional<int64_t> drafted_tokens, accepted_drafts;    // draft tokens proposed, and kept by the target
  // What a batch engine exercised of its layout (SequenceResult's coverage); absent for an
  // engine that decodes one sequence at a time or does not say.
  struct Coverage {
    int64_t ragged_rounds = 0, realignments = 0;
    bool finished_early = false;
  };
  std::optional<Coverage> coverage;
  std::vector<std::vector<TokenLogprob>> top_logprobs;       // per generated token; empty when not recorded
  std::optional<StreamRecord> stream;                        // an answer read from a stream
};

// How an answer's tokens were chosen; a setting not sent to a server is absent.
struct SamplingSettings {
  double temperature = 0.0;  // 0: greedy
  std::optional<int64_t> top_k;  // 0: off
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<uint64_t> seed;
  // The sequence's own random stream of that seed, where one seed serves several sequences
  // (specgate's decoders: SequenceRng(seed, stream)); absent where the seed is the request's own.
  std::optional<uint64_t> stream;
};

// The trees a tree run drafts: a fixed shape's parents and ranks (--tree), or EAGLE-2's growth
// (--tree-topk, --tree-depth, --tree-nodes).
struct TreeSettings {
  std::vector<int64_t> parents, ranks;
  int64_t topk = 0, depth = 0, nodes = 0;
};

// The run an answer came from; every answer of one run carries the same, so that score can
// divide a run's tokens by its wall time (tstamp of the last answer less started_at).
struct RunInfo {
  std::string engine;       // the decoder, or for collected answers the server's API
  std::optional<std::string> server;  // collected answers: what the server says it is (/v1/models' owned_by)
  int64_t batch_size = 1;   // sequences decoded together; for collect, requests in flight
  double started_at = 0.0;  // Unix seconds when the run began decoding
  int64_t max_new_tokens = 0;
  std::optional<int64_t> draft_tokens;  // K, where the decoder drafts
  std::optional<std::string> drafter;   // what it drafts with: "model" or "ngram"
  std::optional<int64_t> ngram_min, ngram_max;  // the n-gram sizes "ngram" matches
  std::optional<int64_t> window;        // sequences active at once, EXSPEC's
  std::optional<std::string> dtype;     // the decoder's floating-point type, where it is known
  std::optional<std::string> draft;     // the draft model's folder name, as model_id names the target's
  std::optional<TreeSettings> tree;     // a tree run's trees
  SamplingSettings sampling;
};

// One line of a Spec-Bench answer file (DESIGN.md section 6); `turns` fill choices[0].
struct Answer {
  int64_t question_id = 0;
  std::string category;
  std::string answer_id;
  std::string model_id;
  std::vector<AnswerTurn> turns;
  bool has_token_ids = true;  // false when the engine gave text only
  double tstamp = 0.0;  // Unix seconds when the answer was complete
  std::optional<std::string> chat_template;
  std::optional<RunInfo> run;  // what rendered the prompts; absent when the bench gave their ids
};

// The clock tstamp and RunInfo::started_at are read from: Unix seconds, now.
double unix_seconds();

// `answer` as the JSON object of its line.
nlohmann::json answer_json(const Answer& answer);
// Writes `answer` as one JSON line.
void write_answer_line(std::ostream& out, const Answer& answer);

}  // namespace specgate
