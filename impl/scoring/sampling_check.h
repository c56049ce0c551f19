#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "impl/sampling/sampling.h"
#include "impl/scoring/answer_reader.h"
#include "impl/scoring/input_file.h"
#include "impl/statistics/uniformity.h"

namespace specgate {

class Rescorer;

// A generated token the shaped target distribution gives no mass: evidence on its own.
struct TokenOutsideSupport {
  std::string file;
  int64_t line = 0;
  int64_t question_id = 0;
  int64_t turn = 0;      // 0-based
  int64_t position = 0;  // 0-based, among the turn's generated tokens
  int64_t token = 0;
};

// One side of the check: the answers of one engine setting (speculation on, or off), possibly
// several files of distinct seeds, as randomised PIT values against the target.
struct SampledSide {
  std::vector<InputFile> files;
  int64_t answers = 0;
  int64_t tokens = 0;  // generated tokens scored, those outside the support included
  std::vector<TokenOutsideSupport> outside_support;
  UniformityHistogram histogram{};
  DistributionTest uniformity;  // one-sample Kolmogorov-Smirnov of the PIT values
  ChiSquareTest chi_square;
};

// One hypothesis of the family the verdict rests on: all tokens pooled, or one subtask's.
struct SampledGroup {
  std::string name;  // "all", or the subtask
  DistributionTest test;
  double holm_p_value = 1.0;  // adjusted over the whole family
  bool rejected = false;
};

struct SamplingCheckRequest {
  std::vector<std::filesystem::path> answers;   // the engine's answers (speculation on)
  std::vector<std::filesystem::path> baseline;  // optional: the same engine with speculation off
  const Rescorer* rescorer = nullptr;           // the target checkpoint
  // The warpers the engine applied; nullopt: every answer's run.sampling, which must agree.
  std::optional<SamplingParams> sampling;
  double alpha = 0.05;
  uint64_t pit_seed = 0;  // seeds the PIT's own uniforms, so that a verdict can be replayed
  TurnScope turns = TurnScope::kAll;
};

struct SamplingCheckReport {
  std::string generated_at;    // UTC, ISO 8601
  SamplingParams sampling;     // seed unused: the answers' seeds are theirs
  std::string sampling_source;  // "answers" or "flags"
  double alpha = 0.05;
  uint64_t pit_seed = 0;
  SampledSide answers;
  std::optional<SampledSide> baseline;
  // "one-sample": the answers' PIT values against Uniform(0, 1). "two-sample": against the
  // baseline's, robust to numerics that both sides share and specgate's model does not.
  std::string test;
  std::vector<SampledGroup> groups;  // "all" first, then subtasks in name order; Holm over all
  bool rejected = false;
  std::vector<std::string> reasons;  // why it was rejected, one line each
};

// Re-scores every generated token of the answers with the target (teacher forcing on the
// engine's own tokens and prompt_token_ids) and tests the draws. Rejected when a token lies
// outside the support, or when Holm's procedure at alpha rejects any group. Throws InputError
// naming the file, line and field for an answer without token_ids or prompt_token_ids, a token
// id outside the vocabulary, sampling settings that are missing, greedy or disagree, or a
// (question, seed) drawn twice.
SamplingCheckReport check_sampling(const SamplingCheckRequest& request);

}  // namespace specgate
