#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conformance/collect/dialect.h"

namespace specgate {
class Rescorer;
}

namespace specgate::cli {

// One turn of an answer as the server reported it, and the ids it was fed: as it says, else as
// they were sent; empty when unknown.
struct ReportedTurn {
  std::vector<int64_t> prompt;
  Completion completion;
};

// By question id and turn.
using ReportedTurns = std::map<std::pair<int64_t, int64_t>, ReportedTurn>;

// Something a server reported besides its tokens that cannot be right.
struct SideChannelFinding {
  int64_t question_id = 0;
  int64_t turn = 0;
  std::optional<int64_t> index;  // the token at fault, where one is
  // usage, finish_reason, logprobs_missing, logprobs_zero, logprob_count, logprob_order,
  // logprob_positive, logprob_chosen_mismatch, logprob_zero_chosen, logprob_mass,
  // logprob_not_chosen, logprob_mismatch, logprob_parity, finish_reason_parity,
  // prompt_logprobs_missing, prompt_logprob_mismatch, prompt_logprob_parity or
  // token_beyond_vocabulary
  std::string kind;
  std::string detail;
};

struct SideChannelSettings {
  int64_t max_new_tokens = 0;  // asked of every turn
  int64_t top_logprobs = 0;    // alternatives asked per token; 0: log-probabilities are not checked
  AlternativesListing listing;  // what the server's API promises of each token's alternatives
  std::optional<int64_t> vocabulary;  // the model's, when known: no id is past it, and a smaller one than asked is listed whole
  int64_t prompt_logprobs = 0;  // alternatives asked per prompt token; 0: not checked
  double tolerance = 0.05;   // nats between two log-probabilities of one token
  const Rescorer* rescorer = nullptr;  // the target, which gives each token's log-probability
};

struct SideChannelCheck {
  std::vector<SideChannelFinding> findings;
  int64_t turns = 0, rescored_turns = 0;
};

// Each greedy turn: every id (answer, alternatives, prompt) within the vocabulary, where it is
// known; usage.completion_tokens against the token ids; a finish reason of length
// before max_new_tokens tokens. When log-probabilities were asked, that they came for every
// token, and of each token's: that its alternatives number and are ordered as the API promises,
// that none is above 0 and together with the chosen token's they hold at most probability 1
// (a chosen log-probability of 0 while another token has mass is logprob_zero_chosen), that the
// value beside the token equals its entry among the alternatives, that the chosen token is the
// most likely and its value the largest; that not every value is 0 where several alternatives
// make that impossible; and, with a rescorer and the prompt's ids, that each chosen token's
// log-probability is the target's. Values within `tolerance` nats of the bound pass. When prompt
// log-probabilities were asked, that they came, one per prompt token after the first, each with
// its token, and with a rescorer the target's. The first finding of each kind per turn.
SideChannelCheck check_side_channels(const ReportedTurns& turns, const SideChannelSettings& settings);

// Each turn `other` answered with the same tokens as `reference`: finish_reason_parity when both
// give finish reasons and they differ. With `logprobs`, logprob_parity where the two reported the
// same tokens up to a token: the first whose chosen log-probabilities (beside the token, else
// among its alternatives) differ by more than `tolerance`. Always, prompt_logprob_parity: the same prompt's first token whose
// log-probability differs by more than `tolerance`.
std::vector<SideChannelFinding> compare_reports(const ReportedTurns& reference, const ReportedTurns& other, bool logprobs,
                                                double tolerance);

}  // namespace specgate::cli
