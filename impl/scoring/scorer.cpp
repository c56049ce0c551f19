#include "impl/scoring/scorer.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

#include "impl/bench/question.h"
#include "impl/common/counted.h"
#include "impl/common/error.h"
#include "impl/common/line_reader.h"
#include "impl/common/sha256.h"
#include "impl/common/utc_now.h"
#include "impl/common/utf8.h"
#include "impl/scoring/near_tie.h"
#include "impl/scoring/rescorer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {
namespace {

constexpr int64_t kContextTokens = 8;
constexpr int64_t kContextCodePoints = 32;
constexpr const char* kUnknownCategory = "unknown";

std::string token_field(const AnswerRecord& answer, int64_t turn, int64_t index) {
  if (answer.plain_form) return "token_ids[" + std::to_string(index) + "]";
  return "choices[0].token_ids[" + std::to_string(turn) + "][" + std::to_string(index) + "]";
}

std::string prompt_field(const AnswerRecord& answer, int64_t turn, size_t index) {
  if (answer.plain_form) return "prompt_token_ids[" + std::to_string(index) + "]";
  return "choices[0].prompt_token_ids[" + std::to_string(turn) + "][" + std::to_string(index) + "]";
}

std::string text_field(const AnswerRecord& answer, size_t turn) {
  return answer.plain_form ? "text" : "choices[0].turns[" + std::to_string(turn) + "]";
}

int64_t turn_count(const AnswerRecord& answer) {
  return static_cast<int64_t>(answer.token_ids ? answer.token_ids->size() : answer.texts->size());
}

std::vector<int64_t> slice(const TurnSequences& turns, int64_t turn, int64_t begin, int64_t end) {
  if (turn >= static_cast<int64_t>(turns.size())) return {};
  const auto& symbols = turns[turn];
  begin = std::clamp<int64_t>(begin, 0, static_cast<int64_t>(symbols.size()));
  end = std::clamp<int64_t>(end, begin, static_cast<int64_t>(symbols.size()));
  return {symbols.begin() + begin, symbols.begin() + end};
}

std::string length_note(const Divergence& d, int64_t reference_turns, int64_t candidate_turns) {
  const std::string turn = "turn " + std::to_string(d.turn);
  if (d.turn >= candidate_turns)
    return "the candidate has " + counted(static_cast<int64_t>(candidate_turns), "turn") + ", the reference " + std::to_string(reference_turns);
  if (d.turn >= reference_turns)
    return "the reference has " + counted(static_cast<int64_t>(reference_turns), "turn") + ", the candidate " + std::to_string(candidate_turns);
  if (!d.candidate_symbol) return "the candidate's " + turn + " ends here, the reference's goes on";
  return "the reference's " + turn + " ends here, the candidate's goes on";
}

bool ends_with_eos(const std::vector<int64_t>& turn, const std::vector<int64_t>& eos_ids) {
  return !turn.empty() && std::find(eos_ids.begin(), eos_ids.end(), turn.back()) != eos_ids.end();
}

// Engines differ on keeping the EOS id that stopped a turn: where one side's turn is the
// other's plus a trailing EOS id, that id is dropped.
void drop_unmatched_eos(TurnSequences& reference, TurnSequences& candidate, const std::vector<int64_t>& eos_ids) {
  for (size_t t = 0; t < std::min(reference.size(), candidate.size()); ++t) {
    std::vector<int64_t>& r = reference[t];
    std::vector<int64_t>& c = candidate[t];
    if (r.size() == c.size() + 1 && ends_with_eos(r, eos_ids) && std::equal(c.begin(), c.end(), r.begin())) r.pop_back();
    if (c.size() == r.size() + 1 && ends_with_eos(c, eos_ids) && std::equal(r.begin(), r.end(), c.begin())) c.pop_back();
  }
}

class Scorer {
 public:
  explicit Scorer(const ScoreRequest& request)
      : request_(request), total_(request.progress ? count_answers(std::span(&request.candidate, 1)) : 0) {
    report_.generated_at = utc_now();
    report_.settings = request.settings;
    if (request.bench) load_bench(*request.bench);
  }

  ScoreReport run() {
    AnswerReader reference(request_.reference, request_.settings.turns);
    AnswerReader candidate(request_.candidate, request_.settings.turns);
    bool reference_open = true, candidate_open = true;
    while (reference_open || candidate_open) {
      std::optional<AnswerRecord> r = reference_open ? reference.next() : std::nullopt;
      std::optional<AnswerRecord> c = candidate_open ? candidate.next() : std::nullopt;
      reference_open = r.has_value();
      candidate_open = c.has_value();
      if (r) check_first(reference_lines_, request_.reference, *r);
      if (c) check_first(candidate_lines_, request_.candidate, *c);
      if (r && c && r->question_id == c->question_id) {
        compare(report_.items[add_item(*r)], *r, *c);
        continue;
      }
      if (r) on_reference(*r);
      if (c) on_candidate(*c);
    }
    if (reference.answers() == 0) throw InputError(request_.reference.string() + ": no answers (the reference must answer at least one question)");
    report_.reference = reference.file();
    report_.candidate = candidate.file();
    finish_unmatched();
    // Reports list questions by id, whatever order a concurrent collect wrote them in.
    std::stable_sort(report_.items.begin(), report_.items.end(),
                     [](const ItemResult& a, const ItemResult& b) { return a.question_id < b.question_id; });
    std::sort(report_.missing_ids.begin(), report_.missing_ids.end());
    std::sort(report_.prompt_mismatch_ids.begin(), report_.prompt_mismatch_ids.end());
    summarize(report_);
    report_.gate = evaluate_gate(report_);
    return std::move(report_);
  }

 private:
  // An answer read before its other side: where to read it again. Only this much is kept, so
  // files in different orders cost a few bytes per waiting question, not the answers.
  struct Parked {
    int64_t line = 0;
    uint64_t offset = 0;
    size_t item = 0;  // references only: its place in report_.items
  };

  void load_bench(const std::filesystem::path& path) {
    std::vector<Question> questions = read_questions(path);
    report_.bench = InputFile{path, sha256_file(path), std::filesystem::file_size(path), static_cast<int64_t>(questions.size())};
    for (Question& question : questions) bench_.emplace(question.question_id, std::move(question));
  }

  // A question id answered twice makes the file ambiguous: which answer would be scored?
  static void check_first(std::unordered_map<int64_t, int64_t>& first_lines, const std::filesystem::path& file,
                          const AnswerRecord& answer) {
    const auto [first, inserted] = first_lines.emplace(answer.question_id, answer.line);
    if (!inserted)
      throw InputError(answer_location(file, answer.line) + ": field 'question_id': " + std::to_string(answer.question_id) +
                       " is already used on line " + std::to_string(first->second));
  }

  AnswerRecord read_again(const std::filesystem::path& file, const Parked& parked) const {
    AnswerRecord answer = parse_answer_line(read_line_at(file, parked.offset), file.string(), parked.line, request_.settings.turns);
    answer.offset = parked.offset;
    return answer;
  }

  std::string category_of(const AnswerRecord& answer) const {
    if (!request_.bench) return answer.category.value_or(kUnknownCategory);
    const auto question = bench_.find(answer.question_id);
    if (question == bench_.end())
      throw InputError(answer_location(request_.reference, answer.line) + ": field 'question_id': question " +
                       std::to_string(answer.question_id) + " is not in " + request_.bench->string());
    if (answer.category && *answer.category != question->second.category)
      throw InputError(answer_location(request_.reference, answer.line) + ": field 'category': '" + *answer.category +
                       "' differs from '" + question->second.category + "' of question " +
                       std::to_string(answer.question_id) + " in " + request_.bench->string());
    return question->second.category;
  }

  size_t add_item(const AnswerRecord& answer) {
    ItemResult item;
    item.question_id = answer.question_id;
    item.category = category_of(answer);
    item.subtask = subtask_of(item.category);
    item.reference_line = answer.line;
    item.reference_turns = turn_count(answer);
    report_.items.push_back(std::move(item));
    return report_.items.size() - 1;
  }

  void on_reference(const AnswerRecord& answer) {
    const size_t item = add_item(answer);
    const auto waiting = waiting_candidates_.find(answer.question_id);
    if (waiting == waiting_candidates_.end()) {
      waiting_references_.emplace(answer.question_id, Parked{answer.line, answer.offset, item});
      return;
    }
    compare(report_.items[item], answer, read_again(request_.candidate, waiting->second));
    waiting_candidates_.erase(waiting);
  }

  void on_candidate(const AnswerRecord& answer) {
    const auto waiting = waiting_references_.find(answer.question_id);
    if (waiting == waiting_references_.end()) {
      waiting_candidates_.emplace(answer.question_id, Parked{answer.line, answer.offset});
      return;
    }
    compare(report_.items[waiting->second.item], read_again(request_.reference, waiting->second), answer);
    waiting_references_.erase(waiting);
  }

  TurnSequences code_points(const AnswerRecord& answer, const std::filesystem::path& file) const {
    TurnSequences turns;
    for (size_t t = 0; t < answer.texts->size(); ++t) {
      turns.emplace_back();
      if (const auto bad = decode_utf8((*answer.texts)[t], turns.back()))
        throw InputError(answer_location(file, answer.line) + ": field '" + text_field(answer, t) + "': invalid UTF-8 at byte " +
                         std::to_string(*bad));
    }
    return turns;
  }

  void compare(ItemResult& item, const AnswerRecord& reference, const AnswerRecord& candidate) {
    compare_pair(item, reference, candidate);
    if (request_.progress) request_.progress(++compared_, total_);
  }

  void compare_pair(ItemResult& item, const AnswerRecord& reference, const AnswerRecord& candidate) {
    item.candidate_line = candidate.line;
    item.candidate_turns = turn_count(candidate);
    item.reference_speed = reference.speed;
    item.candidate_speed = candidate.speed;
    TurnSequences reference_symbols, candidate_symbols;
    if (reference.token_ids && candidate.token_ids) {
      item.unit = Unit::kTokenIds;
      reference_symbols = *reference.token_ids;
      candidate_symbols = *candidate.token_ids;
      const std::vector<int64_t>& eos_ids = request_.settings.eos_ids;
      if (!eos_ids.empty()) {
        report_.reference_ended_with_eos += ends_with_eos(reference_symbols.back(), eos_ids) ? 1 : 0;
        report_.candidate_ended_with_eos += ends_with_eos(candidate_symbols.back(), eos_ids) ? 1 : 0;
      }
      cut_to_the_shorter_run(item, reference, candidate, reference_symbols, candidate_symbols);
      if (!eos_ids.empty()) drop_unmatched_eos(reference_symbols, candidate_symbols, eos_ids);
    } else if (reference.texts && candidate.texts) {
      item.unit = Unit::kCodePoints;
      reference_symbols = code_points(reference, request_.reference);
      candidate_symbols = code_points(candidate, request_.candidate);
    } else {
      const auto has = [](const AnswerRecord& a) { return a.token_ids ? "only token_ids" : "only text"; };
      throw InputError(answer_location(request_.candidate, candidate.line) + ": question " + std::to_string(candidate.question_id) +
                       ": nothing to compare: the candidate has " + has(candidate) + ", its reference (" +
                       answer_location(request_.reference, reference.line) + ") " + has(reference));
    }
    item.comparison = compare_answers(reference_symbols, candidate_symbols);
    // The prompts must agree up to the first turn whose answers differ (a later turn's prompt
    // holds the earlier answers), and only over the turns compared.
    const size_t compared_turns = std::max(reference_symbols.size(), candidate_symbols.size());
    const size_t last_turn = item.comparison.divergence ? static_cast<size_t>(item.comparison.divergence->turn)
                                                        : std::max<size_t>(compared_turns, 1) - 1;
    if (std::optional<PromptMismatch> mismatch = first_prompt_mismatch(reference, candidate, last_turn)) {
      item.prompt_mismatch = mismatch;
      item.comparison = Comparison{.exact = false, .lcp = 0, .reference_length = item.comparison.reference_length,
                                   .candidate_length = item.comparison.candidate_length, .partial = 0.0};
      report_.prompt_mismatch_ids.push_back(item.question_id);
      return;
    }
    if (!item.comparison.divergence) return;
    const Divergence& d = *item.comparison.divergence;
    ItemDivergence divergence;
    divergence.where = d;
    const int64_t context = item.unit == Unit::kTokenIds ? kContextTokens : kContextCodePoints;
    divergence.before = slice(reference_symbols, d.turn, d.index_in_turn - context, d.index_in_turn);
    divergence.reference_after = slice(reference_symbols, d.turn, d.index_in_turn, d.index_in_turn + context);
    divergence.candidate_after = slice(candidate_symbols, d.turn, d.index_in_turn, d.index_in_turn + context);
    if (request_.tokenizer != nullptr && item.unit == Unit::kTokenIds) {
      divergence.text = ItemDivergence::Text{request_.tokenizer->decode(divergence.before),
                                             request_.tokenizer->decode(divergence.reference_after),
                                             request_.tokenizer->decode(divergence.candidate_after)};
    }
    if (d.reference_symbol && d.candidate_symbol) {
      const auto dtype = [](const AnswerRecord& answer) {
        return answer.speed.run ? answer.speed.run->dtype : std::optional<std::string>();
      };
      divergence.near_tie_threshold = near_tie_threshold(request_.settings, dtype(reference), dtype(candidate));
    }
    divergence.attribution = attribute(item, reference, candidate, d, divergence.near_tie_threshold.value_or(0.0));
    item.divergence = std::move(divergence);
  }

  // Where the two runs had different max_new_tokens, a turn that reached the smaller one is no
  // divergence: both sides' turns are cut to it, and the turns after the first cut one dropped.
  void cut_to_the_shorter_run(ItemResult& item, const AnswerRecord& reference, const AnswerRecord& candidate,
                              TurnSequences& reference_symbols, TurnSequences& candidate_symbols) {
    if (!reference.speed.run || !candidate.speed.run) return;
    const int64_t reference_budget = reference.speed.run->max_new_tokens, candidate_budget = candidate.speed.run->max_new_tokens;
    if (reference_budget <= 0 || candidate_budget <= 0 || reference_budget == candidate_budget) return;
    const size_t budget = static_cast<size_t>(std::min(reference_budget, candidate_budget));
    item.compared_tokens_per_turn = static_cast<int64_t>(budget);
    if (!report_.run_length_mismatch) report_.run_length_mismatch = RunLengthMismatch{0, reference_budget, candidate_budget};
    RunLengthMismatch& mismatch = *report_.run_length_mismatch;
    ++mismatch.answers;
    mismatch.other_pairs = mismatch.other_pairs || mismatch.reference_max_new_tokens != reference_budget ||
                           mismatch.candidate_max_new_tokens != candidate_budget;
    for (size_t turn = 0; turn < std::min(reference_symbols.size(), candidate_symbols.size()); ++turn) {
      if (reference_symbols[turn].size() <= budget && candidate_symbols[turn].size() <= budget) continue;
      reference_symbols[turn].resize(std::min(reference_symbols[turn].size(), budget));
      candidate_symbols[turn].resize(std::min(candidate_symbols[turn].size(), budget));
      reference_symbols.resize(turn + 1);
      candidate_symbols.resize(turn + 1);
      return;
    }
  }

  static std::optional<PromptMismatch> first_prompt_mismatch(const AnswerRecord& reference, const AnswerRecord& candidate,
                                                            size_t last_turn) {
    if (!reference.prompt_token_ids || !candidate.prompt_token_ids) return std::nullopt;
    const auto& r = *reference.prompt_token_ids;
    const auto& c = *candidate.prompt_token_ids;
    for (size_t turn = 0; turn < std::min(r.size(), c.size()) && turn <= last_turn; ++turn) {
      if (r[turn] == c[turn]) continue;
      const auto [differs, unused] = std::mismatch(r[turn].begin(), r[turn].end(), c[turn].begin(), c[turn].end());
      return PromptMismatch{static_cast<int64_t>(turn), static_cast<int64_t>(differs - r[turn].begin()),
                            reference.chat_template, candidate.chat_template};
    }
    return std::nullopt;
  }

  AttributionResult attribute(const ItemResult& item, const AnswerRecord& reference, const AnswerRecord& candidate,
                              const Divergence& d, double threshold) {
    AttributionResult result;
    if (!d.reference_symbol || !d.candidate_symbol) {
      result.kind = Attribution::kLength;
      result.note = length_note(d, item.reference_turns, item.candidate_turns);
      return result;
    }
    if (item.unit == Unit::kCodePoints) {
      result.note = "compared in code points (an answer lacks token_ids); log-probabilities are per token";
      return result;
    }
    std::optional<std::vector<TokenLogprob>> recorded;
    if (reference.has_top_logprobs) {
      recorded = recorded_alternatives(read_line_at(request_.reference, reference.offset), request_.reference.string(),
                                       reference.line, d.turn, d.index_in_turn);
    }
    Rescore rescore;
    if (request_.rescorer != nullptr) {
      rescore = [&](std::string& why_not) { return rescore_divergence(reference, candidate, d, why_not); };
    }
    return attribute_divergence(*d.reference_symbol, *d.candidate_symbol, recorded ? &*recorded : nullptr, rescore,
                                threshold);
  }

  std::optional<RescoredLogprobs> rescore_divergence(const AnswerRecord& reference, const AnswerRecord& candidate,
                                                     const Divergence& d, std::string& why_not) {
    const TurnSequences& tokens = *reference.token_ids;
    const int64_t vocab = request_.rescorer->vocab_size();
    const auto check = [&](const AnswerRecord& answer, const std::filesystem::path& file, const std::string& field,
                           int64_t token) {
      if (token < vocab) return;
      throw InputError(answer_location(file, answer.line) + ": field '" + field + "': token " + std::to_string(token) +
                       " is outside the vocabulary of " +
                       request_.settings.rescore_with.value_or("--rescore-with").string() + " (" + std::to_string(vocab) +
                       " tokens)");
    };
    for (int64_t t = 0; t <= d.turn; ++t) {
      const int64_t end = t < d.turn ? static_cast<int64_t>(tokens[t].size()) : d.index_in_turn + 1;
      for (int64_t i = 0; i < end; ++i) check(reference, request_.reference, token_field(reference, t, i), tokens[t][i]);
    }
    check(candidate, request_.candidate, token_field(candidate, d.turn, d.index_in_turn), *d.candidate_symbol);

    std::vector<int64_t> prompt;
    if (reference.prompt_token_ids) {
      prompt = (*reference.prompt_token_ids)[d.turn];
      for (size_t i = 0; i < prompt.size(); ++i) check(reference, request_.reference, prompt_field(reference, d.turn, i), prompt[i]);
      ++report_.rescored_from_answer_prompts;
    } else if (!request_.rescorer->builds_prompts()) {
      why_not = "no prompt_token_ids in the reference answer, which re-scoring through the reference engine needs";
      return std::nullopt;
    } else {
      const auto question = bench_.find(reference.question_id);
      if (question == bench_.end()) {
        why_not = "no prompt_token_ids in the reference answer and no --bench question to build the prompt from";
        return std::nullopt;
      }
      if (d.turn >= static_cast<int64_t>(question->second.turns.size())) {
        why_not = "question " + std::to_string(reference.question_id) + " has " +
                  counted(static_cast<int64_t>(question->second.turns.size()), "turn") + " in " + request_.bench->string();
        return std::nullopt;
      }
      prompt = request_.rescorer->turn_prompt(question->second, static_cast<size_t>(d.turn),
                                              std::span(tokens).first(static_cast<size_t>(d.turn)));
      ++report_.rescored_from_template;
    }
    const std::span<const int64_t> prefix(tokens[d.turn].data(), static_cast<size_t>(d.index_in_turn));
    return request_.rescorer->next_token_logprobs(prompt, prefix, *d.reference_symbol, *d.candidate_symbol, why_not);
  }

  void finish_unmatched() {
    std::vector<Parked> missing;
    for (const auto& [id, parked] : waiting_references_) missing.push_back(parked);
    std::sort(missing.begin(), missing.end(), [](const Parked& a, const Parked& b) { return a.item < b.item; });
    for (const Parked& parked : missing) {
      ItemResult& item = report_.items[parked.item];
      item.missing = true;
      const AnswerRecord answer = read_again(request_.reference, parked);
      const int64_t length = answer.token_ids ? total_length(*answer.token_ids) : total_length(code_points(answer, request_.reference));
      item.comparison = Comparison{.exact = false, .lcp = 0, .reference_length = length, .partial = 0.0};
      report_.missing_ids.push_back(item.question_id);
    }
    std::vector<std::pair<int64_t, int64_t>> unexpected;  // line, id
    for (const auto& [id, parked] : waiting_candidates_) unexpected.emplace_back(parked.line, id);
    std::sort(unexpected.begin(), unexpected.end());
    for (const auto& [line, id] : unexpected) report_.unexpected_ids.push_back(id);
  }

  const ScoreRequest& request_;
  int64_t compared_ = 0, total_;  // answers compared, and the candidate's
  ScoreReport report_;
  std::unordered_map<int64_t, Question> bench_;
  std::unordered_map<int64_t, Parked> waiting_references_, waiting_candidates_;
  std::unordered_map<int64_t, int64_t> reference_lines_, candidate_lines_;  // id -> first line
};

}  // namespace

ScoreReport score_answers(const ScoreRequest& request) { return Scorer(request).run(); }

}  // namespace specgate
