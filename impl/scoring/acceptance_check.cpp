#include "impl/scoring/acceptance_check.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "impl/common/counted.h"
#include "impl/common/error.h"
#include "impl/common/short_number.h"
#include "impl/common/utc_now.h"
#include "impl/scoring/answer_reader.h"
#include "impl/scoring/answer_warpers.h"
#include "impl/scoring/near_tie.h"
#include "impl/scoring/pit_shift.h"
#include "impl/scoring/rescorer.h"
#include "impl/scoring/sampling_check.h"
#include "impl/scoring/stream_registry.h"
#include "impl/statistics/randomized_pit.h"
#include "impl/statistics/uniformity.h"

namespace specgate {
namespace {

// A drafted position: the probability a draft there is accepted, and whether a probability of 0
// or 1 may go the other way in an engine whose rounding differs from the re-scorer's (greedy: a
// near-tie; sampled: a support that would grow within the margin).
struct PositionOdds {
  double probability = 0.0;
  bool either_way = false;
};

// Greedy: the draft proposes its most likely token, accepted exactly when it is the answer's;
// a near-tie where either the runner-up or the answer's token is within `threshold` nats.
std::vector<PositionOdds> greedy_odds(const GreedyChoices& choices, const std::vector<int64_t>& generated, double threshold) {
  std::vector<PositionOdds> odds;
  for (size_t i = 0; i < generated.size(); ++i) {
    const bool agrees = choices.most_likely[i] == generated[i];
    const double lead = agrees ? choices.lead_over_runner_up[i] : choices.lead_over_answer[i];
    odds.push_back({agrees ? 1.0 : 0.0, lead <= threshold});
  }
  return odds;
}

class AcceptanceReader {
 public:
  AcceptanceReader(const AcceptanceCheckRequest& request, AcceptanceCheckReport& report, uint64_t pit_seed)
      : request_(request),
        report_(report),
        warpers_(request.sampling, ""),
        draft_tokens_(request.draft_tokens),
        pit_seed_(pit_seed),
        total_(request.progress ? count_answers(request.answers) : 0) {}

  void read(const std::filesystem::path& file) {
    ++files_read_;
    const std::vector<std::vector<int64_t>> sequences = rescorable_sequences(file, TurnScope::kAll);
    for (const Rescorer* rescorer :
         {request_.target, request_.draft, request_.target_in_engine_dtype, request_.draft_in_engine_dtype})
      if (rescorer != nullptr) rescorer->prepare(sequences);
    AnswerReader reader(file, TurnScope::kAll);
    while (const std::optional<AnswerRecord> record = reader.next()) {
      add(file, *record);
      if (request_.progress) request_.progress(++done_, total_);
    }
    report_.files.push_back(reader.file());
    report_.answers += reader.answers();
  }

  const std::vector<BernoulliTrial>& trials() const { return trials_; }
  // The residual PITs of the tokens drawn after rejected drafts, those left outside the residual,
  // and the sum of their PIT law shifts (empty without a re-scoring in the engine's dtype).
  const std::vector<double>& residual_pits() const { return residual_pits_; }
  int64_t residual_outside() const { return residual_outside_; }
  const std::vector<double>& residual_shift_sum() const { return residual_shift_sum_; }
  bool residual_tested() const { return residual_tested_; }
  const std::optional<double>& rounding_shift() const { return rounding_shift_; }
  const AnswerWarpers& warpers() const { return warpers_; }
  int64_t draft_tokens() const { return draft_tokens_.value_or(0); }

 private:
  void add(const std::filesystem::path& file, const AnswerRecord& record) {
    const std::string at = answer_location(file, record.line);
    answer_uniforms_ = SequenceRng(pit_seed_, (static_cast<uint64_t>(files_read_) << 40) ^ static_cast<uint64_t>(record.line));
    if (!record.token_ids) throw InputError(at + ": field 'token_ids': missing; the acceptance check needs the engine's token ids");
    if (!record.prompt_token_ids)
      throw InputError(at + ": field 'prompt_token_ids': missing; the acceptance check re-scores the prompt the engine was fed");
    const SamplingParams warpers = warpers_.of(record, at);
    // An answer that ended at the prefill's token (an end-of-sequence drawn first) ran no round.
    if (std::ranges::all_of(*record.token_ids, [](const std::vector<int64_t>& turn) { return turn.size() <= 1; })) {
      if (!warpers.greedy()) streams_.add(record, at);
      return;
    }
    const bool listed = record.speed.accept_steps > 0 || record.speed.round_drafts;
    const bool certain_drafts = request_.ngram || request_.greedy_drafts || warpers.greedy();
    if (!listed && !(request_.server_counters && certain_drafts))
      throw InputError(at + ": field 'choices[0].accept_lengths': missing or empty; the acceptance check needs the rounds "
                       "of a speculative engine, or the server's counters (--server-counters) and a drafter that proposes "
                       "with certainty (--drafter ngram, --draft-sampling greedy, or greedy decoding)");
    if (listed && !record.speed.accept_lengths)
      throw InputError(at + ": field 'choices[0].accept_lengths': one flat list over several turns; the acceptance check "
                       "needs each turn's rounds, one list per turn");
    if (!warpers.greedy()) streams_.add(record, at);
    const int64_t k = draft_tokens_of(record, at);
    for (size_t turn = 0; turn < record.token_ids->size(); ++turn) {
      if (listed) {
        add_turn(file, record, turn, warpers, k, at);
        continue;
      }
      check_rescorable_turn(record, turn, request_.target->vocab_size(), at);
      const auto [lengths, drafted] = implied_rounds(record, turn, k, at);
      ++report_.implied_turns;
      add_rounds(file, record, turn, warpers, k, at, lengths, &drafted);
    }
  }

  // The rounds of a turn whose answer lists none, from its tokens, for a drafter that proposes
  // with certainty: after the prefill's token, each round keeps its proposal's longest prefix that
  // the answer continues with, and one token more (a correct engine's token after a rejected draft
  // is never that draft: the residual excludes it). Each round's length, and its drafts: the
  // lookup's, or K from a draft model.
  std::pair<std::vector<int64_t>, std::vector<int64_t>> implied_rounds(const AnswerRecord& record, size_t turn, int64_t k,
                                                                     const std::string& at) const {
    const std::vector<int64_t>& generated = (*record.token_ids)[turn];
    const std::vector<int64_t>& prompt = (*record.prompt_token_ids)[turn];
    const int64_t n = static_cast<int64_t>(generated.size());
    std::vector<int64_t> lengths, drafted;
    if (n == 0) return {lengths, drafted};
    std::vector<int64_t> most_likely;
    if (!request_.ngram) {
      std::string why_not;
      const std::optional<GreedyChoices> choices = request_.draft->greedy_choices(prompt, generated, why_not);
      if (!choices) throw InputError(at + ": turn " + std::to_string(turn) + ": cannot be re-scored: " + why_not);
      most_likely = choices->most_likely;
    }
    std::vector<int64_t> context = prompt;
    context.push_back(generated.front());
    for (int64_t start = 1; start < n;) {
      const std::vector<int64_t> proposal =
          request_.ngram ? ngram_proposal(context, k, *request_.ngram, request_.target->eos_token_ids())
                         : std::vector<int64_t>(most_likely.begin() + start, most_likely.begin() + std::min(n, start + k));
      int64_t kept = 0;
      while (kept < static_cast<int64_t>(proposal.size()) && start + kept < n && proposal[kept] == generated[start + kept])
        ++kept;
      const int64_t length = std::min(kept + 1, n - start);
      lengths.push_back(length);
      drafted.push_back(request_.ngram ? static_cast<int64_t>(proposal.size()) : k);
      context.insert(context.end(), generated.begin() + start, generated.begin() + start + length);
      start += length;
    }
    return {lengths, drafted};
  }

  void add_turn(const std::filesystem::path& file, const AnswerRecord& record, size_t turn, const SamplingParams& warpers,
                int64_t k, const std::string& at) {
    const std::string field = at + ": field 'choices[0].accept_lengths" +
                              (record.token_ids->size() > 1 ? "[" + std::to_string(turn) + "]" : "") + "'";
    const std::vector<int64_t>& lengths = (*record.speed.accept_lengths)[turn];
    for (size_t r = 0; r < lengths.size(); ++r) {
      if (lengths[r] < 1 || lengths[r] > k + 1)
        throw InputError(field + ": entry " + std::to_string(r) + " appends " + std::to_string(lengths[r]) +
                         " tokens; a round of " + std::to_string(k) + " drafts appends 1 to " + std::to_string(k + 1));
    }
    if (record.speed.round_drafts) {
      std::vector<int64_t> rounds, drafts_of_rounds;
      walk_listed_rounds(record, turn, lengths, (*record.speed.round_drafts)[turn], k, field, rounds, drafts_of_rounds);
      return add_rounds(file, record, turn, warpers, k, at, rounds, &drafts_of_rounds);
    }
    add_rounds(file, record, turn, warpers, k, at, lengths, nullptr);
  }

  // The rounds of a server that lists its passes with drafts as it counts them (round_drafts): each
  // cut at the turn's end, where EOS or max_new_tokens stopped it, and, for an n-gram engine, a
  // pass of one token without drafts put back wherever the lookup proposes nothing (such a server
  // drafts K whatever max_new_tokens leaves, as vLLM's scheduler does).
  void walk_listed_rounds(const AnswerRecord& record, size_t turn, const std::vector<int64_t>& lengths,
                          const std::vector<int64_t>& listed_drafts, int64_t k, const std::string& field,
                          std::vector<int64_t>& all_lengths, std::vector<int64_t>& all_drafts) const {
    const std::vector<int64_t>& generated = (*record.token_ids)[turn];
    const int64_t n = static_cast<int64_t>(generated.size());
    if (n == 0) return;
    std::vector<int64_t> context = (*record.prompt_token_ids)[turn];
    context.push_back(generated.front());
    size_t next = 0;
    const std::string must_match = "; --ngram-min and --ngram-max must be the engine's";
    for (int64_t start = 1; start < n;) {
      const int64_t proposed =
          request_.ngram
              ? static_cast<int64_t>(ngram_proposal(context, k, *request_.ngram, request_.target->eos_token_ids()).size())
              : k;
      int64_t length = 1, drafted = 0;
      if (proposed > 0) {
        if (next == lengths.size())
          throw InputError(field + ": the rounds listed end at token " + std::to_string(start) + " of " + std::to_string(n) +
                           (request_.ngram ? ", where the n-gram lookup proposes " + std::to_string(proposed) + " drafts" +
                                                 must_match
                                           : ""));
        if (request_.ngram && listed_drafts[next] != proposed)
          throw InputError(field + ": round " + std::to_string(next) + " verified " + std::to_string(listed_drafts[next]) +
                           " drafts at token " + std::to_string(start) + " where the n-gram lookup proposes " +
                           std::to_string(proposed) + must_match);
        drafted = listed_drafts[next];
        length = lengths[next++];
      }
      length = std::min(length, n - start);
      all_lengths.push_back(length);
      all_drafts.push_back(drafted);
      context.insert(context.end(), generated.begin() + start, generated.begin() + start + length);
      start += length;
    }
    if (next != lengths.size())
      throw InputError(field + ": " + std::to_string(lengths.size() - next) + " rounds listed after the turn's last token" +
                       (request_.ngram ? must_match : ""));
  }

  double near_tie_threshold_of(const AnswerRecord& record) {
    double threshold = request_.near_tie_threshold;
    if (request_.near_tie_by_dtype)
      threshold = widened_near_tie_threshold(threshold, {record.speed.run ? record.speed.run->dtype : std::nullopt,
                                                         request_.rescorer_dtype});
    report_.near_tie_threshold = std::max(report_.near_tie_threshold, threshold);
    return threshold;
  }

  void add_rounds(const std::filesystem::path& file, const AnswerRecord& record, size_t turn, const SamplingParams& warpers,
                  int64_t k, const std::string& at, const std::vector<int64_t>& lengths, const std::vector<int64_t>* listed_drafts) {
    const std::vector<int64_t>& generated = (*record.token_ids)[turn];
    const int64_t n = static_cast<int64_t>(generated.size());
    const std::string field = at + ": field 'choices[0].accept_lengths" +
                              (record.token_ids->size() > 1 ? "[" + std::to_string(turn) + "]" : "") + "'";
    const int64_t appended = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
    const int64_t first = n - appended;  // tokens before the first round
    if (first < 0 || first > 1)
      throw InputError(field + ": the rounds append " + std::to_string(appended) + " tokens to a turn of " + std::to_string(n) +
                       "; they must add up to its tokens, or to all but the prefill's first");
    check_rescorable_turn(record, turn, request_.target->vocab_size(), at);
    if (lengths.empty()) return;
    // Rounds that add up to the whole turn may count the prefill's pass as their first.
    const size_t first_round = first == 0 ? 1 : 0;
    report_.first_rounds_skipped += static_cast<int64_t>(first_round);
    if (lengths.size() <= first_round) return;

    const std::vector<int64_t>& prompt = (*record.prompt_token_ids)[turn];
    int64_t start = first;
    for (size_t r = 0; r < first_round; ++r) start += lengths[r];
    // Drafts each round proposed: K from a model, or what the answer records; an n-gram engine's,
    // looked up (`proposed` by position), or a greedy draft model's most likely tokens.
    std::vector<int64_t> drafted = listed_drafts != nullptr ? *listed_drafts : std::vector<int64_t>(lengths.size(), k);
    std::vector<int64_t> proposed;
    std::string why_not;
    if (request_.ngram) {
      proposed = lookups(record, prompt, generated, lengths, first_round, start, k, listed_drafts == nullptr, drafted);
    } else if (request_.greedy_drafts && !warpers.greedy()) {
      if (const std::optional<GreedyChoices> choices = request_.draft->greedy_choices(prompt, generated, why_not))
        proposed = choices->most_likely;
      else
        throw InputError(at + ": turn " + std::to_string(turn) + ": cannot be re-scored: " + why_not);
    }
    const bool point_mass_drafts = !proposed.empty() || request_.ngram;
    std::vector<PositionOdds> odds;
    std::optional<AcceptanceOdds> accept;  // sampled
    std::vector<double> in_engine_dtype;  // sampled: each position's odds re-scored in the engine's dtype
    if (request_.ngram && warpers.greedy()) {
      for (int64_t i = 0; i < n; ++i) odds.push_back({proposed[i] == generated[i] ? 1.0 : 0.0, false});
    } else if (warpers.greedy()) {
      if (const std::optional<GreedyChoices> choices = request_.draft->greedy_choices(prompt, generated, why_not))
        odds = greedy_odds(*choices, generated, near_tie_threshold_of(record));
    } else {
      if (!report_.margin)
        report_.margin = resolve_support_margin(request_.engine_dtype, request_.support_margin, std::nullopt,
                                                request_.rescorer_dtype, request_.answers, TurnScope::kAll);
      // Every token before the final one went on past: none of them is an EOS id, unless the
      // engine does not stop there.
      const std::vector<int64_t>& eos = request_.target->eos_token_ids();
      const bool stops_at_eos = std::none_of(generated.begin(), generated.end() - 1, [&](int64_t token) {
        return std::find(eos.begin(), eos.end(), token) != eos.end();
      });
      const double margin = report_.margin->logits;
      if (point_mass_drafts) {
        accept = request_.target->lookup_acceptance_probabilities(prompt, generated, proposed, warpers, margin,
                                                                  stops_at_eos, why_not);
        if (accept && request_.target_in_engine_dtype != nullptr) {
          const std::optional<AcceptanceOdds> rounded = request_.target_in_engine_dtype->lookup_acceptance_probabilities(
              prompt, generated, proposed, warpers, margin, stops_at_eos, why_not);
          if (!rounded) throw InputError(at + ": turn " + std::to_string(turn) + ": cannot be re-scored: " + why_not);
          accept->probability_in_engine_dtype = rounded->probability;
        }
      } else {
        residual_tested_ = true;
        accept = request_.target->acceptance_probabilities(*request_.draft, prompt, generated, warpers, margin,
                                                           stops_at_eos, request_.target_in_engine_dtype,
                                                           request_.draft_in_engine_dtype, why_not);
      }
      if (accept) {
        for (size_t i = 0; i < accept->probability.size(); ++i)
          odds.push_back({accept->probability[i], accept->support_may_grow[i]});
        in_engine_dtype = accept->probability_in_engine_dtype;
      }
    }
    if (odds.empty())
      throw InputError(at + ": turn " + std::to_string(turn) + ": cannot be re-scored: " + why_not);

    // A last round cut by max_new_tokens within its drafts may have drafted fewer than K (an
    // engine that drafts only what it can keep): its final token's trial stands only where the
    // answer lists the round's drafts.
    const std::optional<int64_t> counted_last = last_round_accepted(record, turn, lengths, k, at);
    const std::optional<int64_t> last_accepted = listed_drafts != nullptr ? counted_last : std::nullopt;
    report_.final_trials += last_accepted && lengths.back() - 1 < drafted.back();
    for (size_t r = first_round; r < lengths.size(); start += lengths[r], ++r) {
      const bool last = r + 1 == lengths.size();
      ++report_.rounds;
      report_.last_rounds_cut += last;
      // Trials at positions before the final token: j < accepted were accepted, j == accepted
      // rejected. In the last round every token before the final one was an accepted draft, and
      // the final token's own trial is known only from the engine's own count.
      const int64_t appended = lengths[r];
      const int64_t accepted = last ? last_accepted.value_or(appended - 1) : appended - 1;
      const int64_t reached =
          last ? std::min(appended - 1 + (last_accepted ? 1 : 0), drafted[r]) : std::min(accepted + 1, drafted[r]);
      if (accepted > drafted[r]) {
        report_.mismatches.push_back({file.string(), record.line, record.question_id, static_cast<int64_t>(turn),
                                      static_cast<int64_t>(r), start, drafted[r], accepted});
        continue;
      }
      report_.rounds_with_drafts += drafted[r] > 0;
      // The last round's drafts past the final token are unknown unless the engine counted them.
      const int64_t open = last && !last_accepted ? std::max<int64_t>(drafted[r] - accepted, 0) : 0;
      for (int64_t j = 0; j < accepted + open; ++j) {
        DraftPosition& position = position_at(j);
        position.shown += j < accepted;
        position.open += j >= accepted;
      }
      bool resolved = false, differs = false;
      for (int64_t j = 0; j < reached; ++j) {
        const PositionOdds& at_j = odds[start + j];
        const bool success = j < accepted;
        const bool ruled_out = at_j.probability == (success ? 0.0 : 1.0);
        if (ruled_out && at_j.either_way) {
          // Within the engine's rounding the outcome could go either way: it stands, neither adding
          // variance nor ruling anything out.
          trials_.push_back({success ? 1.0 : 0.0, success});
          resolved = true;
          report_.boundary_trials += !warpers.greedy();
        } else {
          trials_.push_back({at_j.probability, success});
          differs = differs || ruled_out;
          if (!in_engine_dtype.empty())
            rounding_shift_ = rounding_shift_.value_or(0.0) + in_engine_dtype[start + j] - at_j.probability;
        }
        ++position_at(j).reached;
        position_at(j).implied += trials_.back().probability;
      }
      if (!warpers.greedy()) {
        const int64_t rejected_at = start + accepted;
        if (point_mass_drafts && accepted < reached && generated[rejected_at] == proposed[rejected_at])
          report_.recovered_drafts.push_back({file.string(), record.line, record.question_id, static_cast<int64_t>(turn),
                                              rejected_at, generated[rejected_at]});
        // The final token is left out: whether it ends the answer depends on what it is.
        const bool rejection_stands = !(odds[rejected_at].probability == 1.0 && odds[rejected_at].either_way);
        if (!point_mass_drafts && accepted < reached && rejected_at + 1 < n && rejection_stands)
          add_residual_draw(*accept, rejected_at);
        continue;
      }
      report_.near_tie_rounds += resolved && !differs;
      if (!differs) continue;
      int64_t predicted = 0;
      while (predicted < drafted[r] && start + predicted < n && odds[start + predicted].probability == 1.0) ++predicted;
      report_.mismatches.push_back({file.string(), record.line, record.question_id, static_cast<int64_t>(turn),
                                    static_cast<int64_t>(r), start, predicted, accepted});
    }
  }

  // An n-gram engine's proposals: what each round from `first_round` on (the first starting at
  // generated[start]) looks up in the prompt and the tokens before it, by the position each
  // proposed token would take (-1 where none), at most what the turn could keep before
  // run.max_new_tokens when `clamped`; their counts into `drafted`.
  std::vector<int64_t> lookups(const AnswerRecord& record, const std::vector<int64_t>& prompt,
                               const std::vector<int64_t>& generated, const std::vector<int64_t>& lengths,
                               size_t first_round, int64_t start, int64_t k, bool clamped, std::vector<int64_t>& drafted) const {
    const int64_t n = static_cast<int64_t>(generated.size());
    const int64_t max_new = record.speed.run && record.speed.run->max_new_tokens > 0 ? record.speed.run->max_new_tokens
                                                                                     : n + k + 1;
    std::vector<int64_t> proposed(n, -1), context = prompt;
    context.insert(context.end(), generated.begin(), generated.begin() + start);
    for (size_t r = first_round; r < lengths.size(); start += lengths[r], ++r) {
      const int64_t keepable = clamped ? std::clamp<int64_t>(max_new - start - 1, 0, k) : k;
      const std::vector<int64_t> drafts =
          ngram_proposal(context, keepable, *request_.ngram, request_.target->eos_token_ids());
      drafted[r] = static_cast<int64_t>(drafts.size());
      for (int64_t j = 0; j < drafted[r] && start + j < n; ++j) proposed[start + j] = drafts[j];
      const int64_t next = std::min(start + lengths[r], n);
      context.insert(context.end(), generated.begin() + start, generated.begin() + next);
    }
    return proposed;
  }

  // What the turn's last round accepted before EOS or max_new_tokens cut it, from the engine's
  // own count of accepted drafts (accepted_drafts less the other rounds'), where the answer records
  // one and stopped at max_new_tokens: a trial at the final token is then decided by its
  // position, as every other is. nullopt when the final token is an EOS id.
  std::optional<int64_t> last_round_accepted(const AnswerRecord& record, size_t turn, const std::vector<int64_t>& lengths,
                                             int64_t k, const std::string& at) const {
    if (!record.speed.turn_accepted_drafts) return std::nullopt;
    const std::vector<int64_t>& generated = (*record.token_ids)[turn];
    const std::vector<int64_t>& eos = request_.target->eos_token_ids();
    if (std::find(eos.begin(), eos.end(), generated.back()) != eos.end()) return std::nullopt;
    int64_t before = 0;
    for (size_t r = 0; r + 1 < lengths.size(); ++r) before += lengths[r] - 1;
    const int64_t counted = (*record.speed.turn_accepted_drafts)[turn] - before;
    if (counted < lengths.back() - 1 || counted > k)
      throw InputError(at + ": field 'choices[0].accepted_drafts[" + std::to_string(turn) + "]': leaves " +
                       std::to_string(counted) + " accepted drafts to the last round, which appended " +
                       std::to_string(lengths.back()) + " tokens with K = " + std::to_string(k));
    return counted;
  }

  // The token at `position` was drawn from the residual.
  void add_residual_draw(const AcceptanceOdds& accept, int64_t position) {
    const double uniform = answer_uniforms_.uniform();
    const std::optional<double> pit = randomized_pit(std::clamp(accept.residual_below[position], 0.0, 1.0),
                                                     accept.residual_own[position], uniform);
    if (!pit) {
      ++residual_outside_;
      return;
    }
    residual_pits_.push_back(*pit);
    if (accept.residual_pit_shift.empty()) return;
    residual_shift_sum_.resize(kPitShiftPoints, 0.0);
    std::ranges::transform(residual_shift_sum_, accept.residual_pit_shift[position], residual_shift_sum_.begin(),
                           std::plus{});
  }

  DraftPosition& position_at(int64_t j) {
    if (report_.positions.size() <= static_cast<size_t>(j)) report_.positions.resize(static_cast<size_t>(j) + 1);
    return report_.positions[static_cast<size_t>(j)];
  }

  // The flag's K, or the answer's run.draft_tokens, which must be every answer's.
  int64_t draft_tokens_of(const AnswerRecord& record, const std::string& at) {
    if (request_.draft_tokens) return *request_.draft_tokens;
    const std::optional<int64_t> recorded = record.speed.run ? record.speed.run->draft_tokens : std::nullopt;
    if (!recorded || *recorded < 1)
      throw InputError(at + ": field 'run.draft_tokens': missing; give the engine's --draft-tokens");
    if (draft_tokens_ && *draft_tokens_ != *recorded)
      throw InputError(at + ": field 'run.draft_tokens': " + std::to_string(*recorded) + ", where earlier answers have " +
                       std::to_string(*draft_tokens_));
    draft_tokens_ = recorded;
    return *recorded;
  }

  const AcceptanceCheckRequest& request_;
  AcceptanceCheckReport& report_;
  AnswerWarpers warpers_;
  StreamRegistry streams_;  // an answer drawn twice would count its trials twice
  std::optional<int64_t> draft_tokens_;
  std::vector<BernoulliTrial> trials_;
  std::optional<double> rounding_shift_;  // AcceptanceCheckReport::rounding_shift
  uint64_t pit_seed_;
  int64_t files_read_ = 0;
  SequenceRng answer_uniforms_{0, 0};  // the residual PITs' uniforms of the answer being read
  bool residual_tested_ = false;
  std::vector<double> residual_pits_, residual_shift_sum_;
  int64_t residual_outside_ = 0;
  int64_t done_ = 0, total_;  // answers read, and in every file
};

// Each draft position's accepted count as the server counted it, against what the answers show.
void hold_to_counters(const SpeculationCounters& counters, AcceptanceCheckReport& report) {
  report.server_counters = counters;
  if (report.positions.size() < counters.accepted_per_position.size())
    report.positions.resize(counters.accepted_per_position.size());
  std::vector<std::string> differ;
  for (size_t j = 0; j < report.positions.size(); ++j) {
    DraftPosition& position = report.positions[j];
    position.counted = j < counters.accepted_per_position.size() ? counters.accepted_per_position[j] : 0;
    if (*position.counted >= position.shown && *position.counted <= position.shown + position.open) continue;
    differ.push_back("position " + std::to_string(j + 1) + ": counted " + std::to_string(*position.counted) +
                     ", the answers show " + std::to_string(position.shown) +
                     (position.open > 0 ? " to " + std::to_string(position.shown + position.open) : ""));
  }
  if (differ.empty()) return;
  std::string listed;
  for (const std::string& line : differ) listed += (listed.empty() ? "" : "; ") + line;
  report.reasons.push_back("the server's counters disagree with its answers on the drafts accepted at " +
                           counted(static_cast<int64_t>(differ.size()), "draft position") + " (" + listed + ")");
}

ResidualTest residual_test(const AcceptanceReader& reader, double alpha) {
  ResidualTest test{.draws = static_cast<int64_t>(reader.residual_pits().size()),
                    .outside = reader.residual_outside(),
                    .alpha = alpha};
  if (test.draws == 0) return test;
  const DistributionTest ks = ks_uniformity_test(reader.residual_pits(), alpha);
  test.distance = ks.distance;
  for (const double sum : reader.residual_shift_sum())
    test.rounding_shift = std::max(test.rounding_shift, std::abs(sum) / static_cast<double>(test.draws));
  test.allowance = kRoundingShiftTolerance * test.rounding_shift;
  test.p_value = ks_p_value(std::max(0.0, test.distance - test.allowance), static_cast<double>(test.draws));
  test.rejected = test.p_value <= alpha;
  return test;
}

}  // namespace

AcceptanceCheckReport check_acceptance(const AcceptanceCheckRequest& request) {
  if (!(request.alpha > 0.0 && request.alpha < 1.0))
    throw InputError("--alpha: must be in (0, 1), got " + std::to_string(request.alpha));
  if (request.draft_tokens && *request.draft_tokens < 1)
    throw InputError("--draft-tokens: must be 1 or more, got " + std::to_string(*request.draft_tokens));
  if (!(request.near_tie_threshold >= 0.0 && std::isfinite(request.near_tie_threshold)))
    throw InputError("--near-tie-threshold: must be a finite number of nats >= 0, got " + short_number(request.near_tie_threshold));
  if (request.ngram) validate(*request.ngram);
  if (!request.ngram && request.draft->vocab_size() != request.target->vocab_size())
    throw InputError("--draft: a vocabulary of " + std::to_string(request.draft->vocab_size()) + " tokens, the target's has " +
                     std::to_string(request.target->vocab_size()));
  AcceptanceCheckReport report;
  report.generated_at = utc_now();
  report.alpha = request.alpha;
  report.near_tie_threshold = request.near_tie_threshold;
  AcceptanceReader reader(request, report, derived_pit_seed(request.answers, {}));
  for (const std::filesystem::path& file : request.answers) reader.read(file);
  if (reader.trials().empty())
    throw InputError("--answers: no drafted position before an answer's final token to compare");
  report.sampling = *reader.warpers().settled();
  report.sampling_source = reader.warpers().source();
  report.draft_tokens = reader.draft_tokens();
  report.drafter = request.ngram ? "ngram " + std::to_string(request.ngram->min_n) + "-" + std::to_string(request.ngram->max_n)
                  : request.greedy_drafts ? "model (greedy drafts)"
                                          : "model";
  report.rounding_shift = reader.rounding_shift();
  if (reader.residual_tested()) report.residual = residual_test(reader, request.alpha / 2);
  report.test = bernoulli_sum_test(reader.trials(), report.residual ? request.alpha / 2 : request.alpha,
                                   kRoundingShiftTolerance * report.rounding_shift.value_or(0.0));

  if (!report.mismatches.empty()) {
    const RoundMismatch& first = report.mismatches.front();
    report.reasons.push_back(std::to_string(report.mismatches.size()) + " of " + std::to_string(report.rounds) +
                             " greedy rounds accept another number of drafts than the drafter proposes (first: question " +
                             std::to_string(first.question_id) + ", turn " + std::to_string(first.turn) + ", round " +
                             std::to_string(first.round) + ", " + std::to_string(first.observed) + " accepted where " +
                             std::to_string(first.predicted) + " match)");
  } else if (report.test.rejected) {
    const BernoulliSumTest& t = report.test;
    report.reasons.push_back(std::to_string(t.observed) + " drafts accepted of " + std::to_string(t.trials) +
                             " reached where the models imply " + short_number(t.expected) +
                             (t.allowed_shift != 0.0 ? ", rounding in the engine's dtype allowed to move that by " +
                                                           short_number(t.allowed_shift)
                                                     : "") +
                             " (ratio " + short_number(t.ratio) +
                             (t.ruled_out > 0 ? ", " + std::to_string(t.ruled_out) + " outcomes they rule out" : "") +
                             "), p = " + short_number(t.p_value) + " <= alpha " + short_number(t.alpha));
  }
  if (report.residual && report.residual->rejected) {
    const ResidualTest& r = *report.residual;
    report.reasons.push_back(counted(r.draws, "token") + " drawn after rejected drafts do not follow the residual " +
                             "max(p - q, 0): Kolmogorov-Smirnov D = " + short_number(r.distance, 3) +
                             (r.allowance > 0.0 ? ", " + short_number(r.allowance, 3) + " of it allowed for rounding" : "") +
                             ", p = " + short_number(r.p_value, 3) + " <= alpha " + short_number(r.alpha));
  }
  if (!report.recovered_drafts.empty()) {
    const RecoveredDraft& first = report.recovered_drafts.front();
    const int64_t drawn = static_cast<int64_t>(report.recovered_drafts.size());
    report.reasons.push_back(counted(drawn, "token") + " drawn after a rejected draft " + (drawn == 1 ? "is" : "are") +
                             " that draft, which the residual excludes where the drafter proposes with certainty (first: "
                             "question " + std::to_string(first.question_id) +
                             ", turn " + std::to_string(first.turn) + ", token " + std::to_string(first.position) + ", id " +
                             std::to_string(first.token) + ")");
  }
  if (request.server_counters) hold_to_counters(*request.server_counters, report);
  report.rejected = !report.reasons.empty();
  return report;
}

}  // namespace specgate
