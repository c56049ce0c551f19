#include "conformance/differential/side_channels.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <span>

#include "impl/reports/report_text.h"
#include "impl/scoring/rescorer.h"

namespace specgate::cli {
namespace {

std::optional<double> logprob_of(const std::vector<TokenLogprob>& alternatives, int64_t token) {
  for (const TokenLogprob& alternative : alternatives) {
    if (alternative.token_id == token) return alternative.logprob;
  }
  return std::nullopt;
}

// The log-probability the server gave token `index` among its alternatives; nullopt when the
// chosen token is not among them.
std::optional<double> listed_logprob(const Completion& completion, size_t index) {
  if (!completion.token_ids || index >= completion.top_logprobs.size() || index >= completion.token_ids->size()) return std::nullopt;
  return logprob_of(completion.top_logprobs[index], (*completion.token_ids)[index]);
}

// The log-probability reported beside token `index`, where the server gives one.
std::optional<double> beside_logprob(const Completion& completion, size_t index) {
  return index < completion.chosen_logprobs.size() ? completion.chosen_logprobs[index] : std::nullopt;
}

// What a user reads as token `index`'s log-probability: the value beside it, else its entry
// among the alternatives.
std::optional<double> chosen_logprob(const Completion& completion, size_t index) {
  const std::optional<double> beside = beside_logprob(completion, index);
  return beside ? beside : listed_logprob(completion, index);
}

// Below this a change of order is rounding, not an unsorted list: float32 log-probabilities
// of the tokens a top-k list holds are exact to about 1e-6.
constexpr double kOrderSlack = 1e-4;

std::string figure(double logprob) { return short_number(logprob, 4); }
std::string token(int64_t id) { return "token " + std::to_string(id); }

class TurnChecker {
 public:
  TurnChecker(int64_t question_id, int64_t turn, const ReportedTurn& reported, const SideChannelSettings& settings,
              std::vector<SideChannelFinding>& findings)
      : question_id_(question_id), turn_(turn), reported_(reported), completion_(reported.completion), settings_(settings),
        findings_(findings) {}

  // The token ids, which every check but parity needs.
  bool has_ids() const { return completion_.token_ids.has_value(); }
  const std::vector<int64_t>& ids() const { return *completion_.token_ids; }

  void usage() {
    const auto tokens = static_cast<int64_t>(ids().size());
    if (completion_.new_tokens && *completion_.new_tokens != tokens)
      add("usage", std::nullopt,
          "usage.completion_tokens is " + std::to_string(*completion_.new_tokens) + ", the answer has " + std::to_string(tokens) + " tokens");
  }

  // Every id the turn holds, answer, prompt and alternatives, within the model's vocabulary.
  void ids_in_vocabulary() {
    if (!settings_.vocabulary) return;
    const int64_t vocabulary = *settings_.vocabulary;
    const auto beyond = [vocabulary](int64_t id) { return id < 0 || id >= vocabulary; };
    const auto flag = [&](std::optional<int64_t> at, const std::string& what, int64_t id) {
      add("token_beyond_vocabulary", at, what + " " + std::to_string(id) + " is beyond the model's vocabulary of " + std::to_string(vocabulary));
    };
    if (has_ids()) {
      for (size_t i = 0; i < ids().size(); ++i) {
        if (beyond(ids()[i])) return flag(static_cast<int64_t>(i), "token", ids()[i]);
      }
    }
    for (size_t i = 0; i < completion_.top_logprobs.size(); ++i) {
      for (const TokenLogprob& alternative : completion_.top_logprobs[i]) {
        if (beyond(alternative.token_id)) return flag(static_cast<int64_t>(i), "alternative", alternative.token_id);
      }
    }
    for (const int64_t id : reported_.prompt) {
      if (beyond(id)) return flag(std::nullopt, "prompt token", id);
    }
  }

  void finish_reason() {
    const auto tokens = static_cast<int64_t>(ids().size());
    if (completion_.finish_reason == "length" && tokens < settings_.max_new_tokens)
      add("finish_reason", std::nullopt,
          "finish_reason is length after " + std::to_string(tokens) + " of the " + std::to_string(settings_.max_new_tokens) + " tokens asked");
  }

  // False when there are none to check further.
  bool logprobs_given() {
    if (ids().empty()) return false;
    if (completion_.top_logprobs.empty()) {
      add("logprobs_missing", std::nullopt,
          "asked for " + std::to_string(settings_.top_logprobs) + " alternatives per token, got none");
      return false;
    }
    std::optional<size_t> first;
    int64_t missing = 0;
    for (size_t i = 0; i < completion_.top_logprobs.size(); ++i) {
      if (!completion_.top_logprobs[i].empty()) continue;
      if (!first) first = i;
      ++missing;
    }
    if (first)
      add("logprobs_missing", static_cast<int64_t>(*first),
          std::to_string(missing) + " of " + std::to_string(ids().size()) + " tokens have no log-probabilities");
    return true;
  }

  void not_all_zero() {
    bool all_zero = true, several = false;
    for (const auto& alternatives : completion_.top_logprobs) {
      several = several || alternatives.size() > 1;
      for (const TokenLogprob& alternative : alternatives) all_zero = all_zero && alternative.logprob == 0.0;
    }
    if (all_zero && several)
      add("logprobs_zero", std::nullopt, "every log-probability is 0, which several alternatives of one token cannot all be");
  }

  // What each token's own figures say of each other, whatever the model.
  void each_token_consistent() {
    for (size_t i = 0; i < ids().size() && i < completion_.top_logprobs.size(); ++i) {
      const std::vector<TokenLogprob>& alternatives = completion_.top_logprobs[i];
      if (alternatives.empty()) continue;
      const auto at = static_cast<int64_t>(i);
      count(i, alternatives);
      order(i, alternatives);
      const std::optional<double> beside = beside_logprob(completion_, i), listed = listed_logprob(completion_, i);
      std::optional<TokenLogprob> highest;
      for (const TokenLogprob& alternative : alternatives) {
        if (!highest || alternative.logprob > highest->logprob) highest = alternative;
      }
      if (beside && *beside > highest->logprob) highest = TokenLogprob{ids()[i], *beside};
      if (highest->logprob > settings_.tolerance)
        add("logprob_positive", at, token(highest->token_id) + " has log-probability " + figure(highest->logprob) + ", above 0");
      if (beside && listed && std::abs(*beside - *listed) > settings_.tolerance)
        add("logprob_chosen_mismatch", at,
            token(ids()[i]) + " has " + figure(*beside) + " beside it, " + figure(*listed) + " among its alternatives");
      mass(i, chosen_logprob(completion_, i));
    }
  }

  void chosen_is_most_likely() {
    for (size_t i = 0; i < ids().size() && i < completion_.top_logprobs.size(); ++i) {
      const auto& alternatives = completion_.top_logprobs[i];
      if (alternatives.empty()) continue;
      const std::optional<double> listed = listed_logprob(completion_, i), beside = beside_logprob(completion_, i);
      std::optional<TokenLogprob> best_other;
      for (const TokenLogprob& alternative : alternatives) {
        if (alternative.token_id != ids()[i] && (!best_other || alternative.logprob > best_other->logprob)) best_other = alternative;
      }
      // A tie at the k-th place may leave the chosen token out; the value beside it says so.
      if (!listed && !(beside && best_other->logprob - *beside <= settings_.tolerance)) {
        add("logprob_not_chosen", static_cast<int64_t>(i),
            token(ids()[i]) + " is not among its " + std::to_string(alternatives.size()) +
                " alternatives, though greedy decoding chose it");
        return;
      }
      for (const auto& [where, value] : {std::pair{"", listed}, std::pair{" beside it", beside}}) {
        if (!value || !best_other || best_other->logprob - *value <= settings_.tolerance) continue;
        add("logprob_not_chosen", static_cast<int64_t>(i),
            "greedy decoding chose " + token(ids()[i]) + " (" + figure(*value) + where + "), yet " + token(best_other->token_id) +
                " has " + figure(best_other->logprob));
        return;
      }
    }
  }

  void prompt_logprobs() {
    const std::vector<int64_t>& prompt = reported_.prompt;
    const auto& given = reported_.completion.prompt_logprobs;
    if (given.empty()) {
      add("prompt_logprobs_missing", std::nullopt,
          "asked for " + std::to_string(settings_.prompt_logprobs) + " alternatives per prompt token, got none");
      return;
    }
    if (prompt.empty()) return;
    if (given.size() + 1 != prompt.size()) {
      add("prompt_logprob_mismatch", std::nullopt,
          std::to_string(given.size()) + " prompt log-probabilities for a prompt of " + std::to_string(prompt.size()) + " tokens");
      return;
    }
    std::optional<std::vector<double>> target;
    if (settings_.rescorer != nullptr && in_vocabulary(prompt)) {
      std::string why_not;
      target = settings_.rescorer->generated_logprobs(std::span(prompt).first(1), std::span(prompt).subspan(1), why_not);
    }
    for (size_t i = 0; i < given.size(); ++i) {
      const std::optional<double> own = logprob_of(given[i], prompt[i + 1]);
      if (!own) {
        add("prompt_logprob_mismatch", static_cast<int64_t>(i + 1),
            "prompt token " + std::to_string(prompt[i + 1]) + " is not among its " + std::to_string(given[i].size()) + " log-probabilities");
        return;
      }
      if (target && std::abs(*own - (*target)[i]) > settings_.tolerance) {
        add("prompt_logprob_mismatch", static_cast<int64_t>(i + 1),
            "the server gives prompt token " + std::to_string(prompt[i + 1]) + " " + figure(*own) + ", the target " + figure((*target)[i]));
        return;
      }
    }
  }

  // True when the turn was re-scored.
  bool against_target() {
    if (settings_.rescorer == nullptr || reported_.prompt.empty()) return false;
    if (!in_vocabulary(reported_.prompt) || !in_vocabulary(ids())) return false;  // token_beyond_vocabulary
    std::string why_not;
    const std::optional<std::vector<double>> target = settings_.rescorer->generated_logprobs(reported_.prompt, ids(), why_not);
    if (!target) return false;
    for (size_t i = 0; i < target->size(); ++i) {
      const std::optional<double> chosen = chosen_logprob(completion_, i);
      if (chosen && std::abs(*chosen - (*target)[i]) > settings_.tolerance) {
        add("logprob_mismatch", static_cast<int64_t>(i),
            "the server gives token " + std::to_string(ids()[i]) + " " + figure(*chosen) + ", the target " +
                figure((*target)[i]));
        break;
      }
    }
    return true;
  }

 private:
  using Order = AlternativesListing::Order;

  void count(size_t i, const std::vector<TokenLogprob>& alternatives) {
    const AlternativesListing& listing = settings_.listing;
    const auto given = static_cast<int64_t>(alternatives.size());
    const int64_t asked = std::min(settings_.top_logprobs, settings_.vocabulary.value_or(settings_.top_logprobs));
    const int64_t most = asked + listing.beyond_asked;
    const bool tied = listing.ties_extend && given > asked &&
                      std::all_of(alternatives.begin() + asked, alternatives.end(), [&](const TokenLogprob& a) {
                        return std::abs(a.logprob - alternatives[asked - 1].logprob) <= kOrderSlack;
                      });
    if ((given < asked || given > most) && !tied)
      add("logprob_count", static_cast<int64_t>(i),
          token(ids()[i]) + " has " + std::to_string(given) + " alternatives; " + std::to_string(asked) +
              (most > asked ? " or " + std::to_string(most) : "") + " were asked");
  }

  void order(size_t i, const std::vector<TokenLogprob>& alternatives) {
    const Order order = settings_.listing.order;
    if (order == Order::kNone) return;
    size_t first = 0;
    if (order == Order::kChosenFirst) {
      if (alternatives.front().token_id != ids()[i]) {
        add("logprob_order", static_cast<int64_t>(i),
            "the alternatives of " + token(ids()[i]) + " begin with " + token(alternatives.front().token_id) + ", not the chosen token");
        return;
      }
      first = 1;
    }
    for (size_t k = first + 1; k < alternatives.size(); ++k) {
      if (alternatives[k].logprob <= alternatives[k - 1].logprob + kOrderSlack) continue;
      add("logprob_order", static_cast<int64_t>(i),
          "the alternatives of " + token(ids()[i]) + " list " + token(alternatives[k].token_id) + " (" + figure(alternatives[k].logprob) +
              ") after " + token(alternatives[k - 1].token_id) + " (" + figure(alternatives[k - 1].logprob) + ")");
      return;
    }
  }

  // The chosen token and its listed alternatives hold at most probability 1, each value allowed
  // `tolerance` nats too high: a chosen value of 0 leaves the others at most e^tolerance - 1.
  void mass(size_t i, std::optional<double> chosen) {
    double others = 0.0;
    for (const TokenLogprob& alternative : completion_.top_logprobs[i]) {
      if (alternative.token_id != ids()[i]) others += std::exp(alternative.logprob);
    }
    const double slack = std::exp(settings_.tolerance);
    const auto at = static_cast<int64_t>(i);
    if (chosen && *chosen == 0.0 && others > slack - 1.0) {
      add("logprob_zero_chosen", at,
          token(ids()[i]) + " has log-probability 0, probability 1, yet its other alternatives hold probability " +
              short_number(others, 3));
    } else if (const double total = others + (chosen ? std::exp(*chosen) : 0.0); total > slack) {
      add("logprob_mass", at,
          "the probabilities of " + token(ids()[i]) + " and its alternatives sum to " + short_number(total, 4) + ", above 1");
    }
  }

  bool in_vocabulary(const std::vector<int64_t>& ids) const {
    const int64_t vocabulary = settings_.rescorer->vocab_size();
    return std::all_of(ids.begin(), ids.end(), [vocabulary](int64_t id) { return id >= 0 && id < vocabulary; });
  }

  void add(std::string kind, std::optional<int64_t> index, std::string detail) {
    if (!found_.insert(kind).second) return;
    findings_.push_back({question_id_, turn_, index, std::move(kind), std::move(detail)});
  }

  int64_t question_id_, turn_;
  const ReportedTurn& reported_;
  const Completion& completion_;
  std::set<std::string> found_;  // kinds already found in this turn
  const SideChannelSettings& settings_;
  std::vector<SideChannelFinding>& findings_;
};

}  // namespace

SideChannelCheck check_side_channels(const ReportedTurns& turns, const SideChannelSettings& settings) {
  SideChannelCheck check;
  for (const auto& [key, reported] : turns) {
    ++check.turns;
    TurnChecker checker(key.first, key.second, reported, settings, check.findings);
    checker.ids_in_vocabulary();
    if (settings.prompt_logprobs > 0) checker.prompt_logprobs();
    if (!checker.has_ids()) continue;
    checker.usage();
    checker.finish_reason();
    if (settings.top_logprobs == 0 || !checker.logprobs_given()) continue;
    checker.not_all_zero();
    checker.each_token_consistent();
    checker.chosen_is_most_likely();
    if (checker.against_target()) ++check.rescored_turns;
  }
  return check;
}

std::vector<SideChannelFinding> compare_reports(const ReportedTurns& reference, const ReportedTurns& other, bool logprobs,
                                                double tolerance) {
  std::vector<SideChannelFinding> findings;
  for (const auto& [key, theirs] : other) {
    const auto ours = reference.find(key);
    if (ours == reference.end()) continue;
    if (theirs.completion.token_ids && theirs.completion.token_ids == ours->second.completion.token_ids && theirs.completion.finish_reason && ours->second.completion.finish_reason &&
        *theirs.completion.finish_reason != *ours->second.completion.finish_reason)
      findings.push_back({key.first, key.second, std::nullopt, "finish_reason_parity",
                          "the same tokens end with finish_reason " + *theirs.completion.finish_reason + " here, " +
                              *ours->second.completion.finish_reason + " in the reference schedule"});
    if (theirs.prompt == ours->second.prompt && theirs.completion.prompt_logprobs.size() == ours->second.completion.prompt_logprobs.size()) {
      for (size_t i = 0; i < theirs.completion.prompt_logprobs.size() && i + 1 < theirs.prompt.size(); ++i) {
        const int64_t token = theirs.prompt[i + 1];
        const std::optional<double> a = logprob_of(ours->second.completion.prompt_logprobs[i], token), b = logprob_of(theirs.completion.prompt_logprobs[i], token);
        if (a && b && std::abs(*a - *b) > tolerance) {
          findings.push_back({key.first, key.second, static_cast<int64_t>(i + 1), "prompt_logprob_parity",
                              "prompt token " + std::to_string(token) + " has " + figure(*b) + " here, " + figure(*a) +
                                  " in the reference schedule"});
          break;
        }
      }
    }
    if (!logprobs || !theirs.completion.token_ids || !ours->second.completion.token_ids) continue;
    const std::vector<int64_t>& their_ids = *theirs.completion.token_ids;
    const std::vector<int64_t>& our_ids = *ours->second.completion.token_ids;
    for (size_t i = 0; i < their_ids.size() && i < our_ids.size(); ++i) {
      if (their_ids[i] != our_ids[i]) break;
      const std::optional<double> a = chosen_logprob(ours->second.completion, i), b = chosen_logprob(theirs.completion, i);
      if (a && b && std::abs(*a - *b) > tolerance) {
        findings.push_back({key.first, key.second, static_cast<int64_t>(i), "logprob_parity",
                            "token " + std::to_string(their_ids[i]) + " has " + figure(*b) + " here, " + figure(*a) +
                                " in the reference schedule"});
        break;
      }
    }
  }
  return findings;
}

}  // namespace specgate::cli
