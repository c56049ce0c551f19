#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/bench/answer.h"
#include "impl/common/line_reader.h"
#include "impl/common/token_logprob.h"
#include "impl/scoring/input_file.h"

namespace specgate {

// Which turns of a multi-turn answer are scored.
enum class TurnScope { kAll, kFirst };

// The speed fields of choices[0], summed over the scored turns; each is absent when the
// answer does not carry it.
struct AnswerSpeed {
  std::optional<double> wall_time;          // seconds
  std::optional<int64_t> new_tokens;        // new_tokens, else the length of token_ids
  std::optional<int64_t> decoding_steps;    // target passes
  int64_t accept_steps = 0;                 // entries of accept_lengths (one per target pass)
  int64_t accepted_tokens = 0;              // their sum: tokens appended by those passes
  // The scored turns' accept_lengths, one list per turn: when the answer gives them per turn,
  // or flat for a single turn.
  std::optional<std::vector<std::vector<int64_t>>> accept_lengths;
  std::optional<int64_t> drafted_tokens;    // draft tokens proposed
  std::optional<int64_t> accepted_drafts;   // of those, the ones the target kept
  // The same per scored turn: with accept_lengths, what the last round accepted before EOS or
  // max_new_tokens cut it short (specgate's decoders count every accepted draft).
  std::optional<std::vector<int64_t>> turn_accepted_drafts;
  // Per scored turn, the drafts each entry of its accept_lengths verified, where the engine
  // reports them (round_drafts: a server listing only its passes with drafts).
  std::optional<std::vector<std::vector<int64_t>>> round_drafts;
  // Coverage (AnswerTurn::Coverage), summed over the scored turns: rounds in which rows of the
  // batch kept different numbers of drafts, moves of the answer's K/V within the batch caches,
  // and turns that finished while others of their batch went on.
  std::optional<int64_t> ragged_rounds, realignments, finished_early;
  // A streamed answer's scored turns (chunk_seconds, and chunk_tokens where the server gave ids).
  std::optional<std::vector<StreamRecord>> streams;
  // tstamp, when the answer covers every turn its run generated (not the first of several).
  std::optional<double> finished_at;
  std::optional<RunInfo> run;  // the run it came from, as generate and collect record it
};

// One answer as scoring needs it. Log-probabilities are not kept: a reference's
// top_logprobs are read back from its line at a divergence only.
struct AnswerRecord {
  int64_t question_id = 0;
  std::optional<std::string> category;
  std::optional<std::string> chat_template;  // what rendered the prompts, where the answer says
  std::optional<std::vector<std::string>> texts;               // one per turn
  std::optional<std::vector<std::vector<int64_t>>> token_ids;  // one list per turn
  std::optional<std::vector<std::vector<int64_t>>> prompt_token_ids;  // what the engine was fed, per turn
  bool has_top_logprobs = false;
  AnswerSpeed speed;
  bool plain_form = false;  // token_ids/text at the top level rather than in choices[0]
  int64_t line = 0;     // 1-based, in its file
  uint64_t offset = 0;  // of the line's first byte
};

// Parses one line of an answer file (DESIGN.md section 6): the Spec-Bench form (choices[0]
// holds turns and optionally token_ids, prompt_token_ids and top_logprobs, one entry per turn)
// or the plain form (question_id with token_ids and/or text, optionally prompt_token_ids, one
// turn). Every field is checked, the shape of top_logprobs included (one list per turn, one
// entry per generated token), and the speed and coverage fields (wall_time, new_tokens,
// decoding_steps, drafted_tokens, accepted_drafts, ragged_rounds, realignments: one number per
// turn; finished_early: true or false per turn; accept_lengths: flat as Spec-Bench writes it,
// or one list per turn; round_drafts: one list per turn, an entry per entry of that turn's
// accept_lengths); with TurnScope::kFirst only the first turn is kept (a flat
// accept_lengths of a multi-turn answer cannot be split and is then left out). Throws
// InputError "<source>:<line>: field '<path>': <problem>".
AnswerRecord parse_answer_line(std::string_view line, const std::string& source, int64_t line_number, TurnScope scope);

// The alternatives an answer line recorded for generated token `index` of `turn`
// (top_logprobs[turn][index]); throws InputError when they are malformed or absent.
std::vector<TokenLogprob> recorded_alternatives(std::string_view line, const std::string& source, int64_t line_number,
                                                int64_t turn, int64_t index);

// "<file>:<line>", how errors and reports name an answer.
std::string answer_location(const std::filesystem::path& file, int64_t line);

// Throws InputError "<at>: field '...': ..." unless turn `turn` of `record` can be re-scored by a
// model of `vocabulary` tokens: a prompt of at least one token, and every prompt and generated
// id in [0, vocabulary). Needs token_ids and prompt_token_ids.
void check_rescorable_turn(const AnswerRecord& record, size_t turn, int64_t vocabulary, const std::string& at);

// Each turn's prompt_token_ids followed by its token_ids, for the answers of `path` that hold
// both and generated tokens in that turn: what re-scoring them feeds the target. Lines are
// parsed as AnswerReader does.
std::vector<std::vector<int64_t>> rescorable_sequences(const std::filesystem::path& path, TurnScope scope);

// Called by a check after each answer it has re-scored: answers done, and the answers of all its
// files (count_answers). Empty: no progress to report.
using AnswerProgress = std::function<void(int64_t done, int64_t total)>;

// The answers in `paths`, their lines that are not blank, unparsed: what a check's progress
// counts toward. A file that cannot be read counts none; its reader says why.
int64_t count_answers(std::span<const std::filesystem::path> paths);

// Reads an answer file one line at a time; blank lines are skipped.
class AnswerReader {
 public:
  AnswerReader(const std::filesystem::path& path, TurnScope scope);

  // The next answer, or nullopt at the end of the file.
  std::optional<AnswerRecord> next();

  const std::filesystem::path& path() const { return reader_.path(); }
  int64_t answers() const { return answers_; }
  // Valid once next() has returned nullopt.
  const std::string& sha256() const { return reader_.sha256(); }
  uint64_t bytes() const { return reader_.bytes(); }
  // The file as a report names it; valid once next() has returned nullopt.
  InputFile file() const { return {path(), sha256(), bytes(), answers()}; }

 private:
  LineReader reader_;
  TurnScope scope_;
  std::string source_;
  std::string line_;
  int64_t answers_ = 0;
};

}  // namespace specgate
