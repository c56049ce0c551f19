#include "impl/scoring/answer_reader.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <numeric>
#include <utility>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_line_context.h"
#include "impl/common/json_scan.h"
#include "impl/common/logprob_limit.h"

namespace specgate {
namespace {

using nlohmann::json;

std::string indexed(const std::string& field, size_t index) { return field + "[" + std::to_string(index) + "]"; }

// A top_logprobs value located in a line without being parsed, with its shape: the kind of
// each element and, for lists, how many elements they hold.
struct LogprobSpan {
  size_t begin = 0, end = 0;
  std::string kind;
  std::vector<std::string> element_kinds;
  std::vector<int64_t> element_sizes;
};

// The top_logprobs members of a line: choices[0]'s (Spec-Bench form) and the top level's
// (plain form). `blanked` lists every span of both, later occurrences of a key included.
struct LineLayout {
  std::optional<LogprobSpan> in_choice;
  std::optional<LogprobSpan> at_top;
  std::vector<std::pair<size_t, size_t>> blanked;
};

LogprobSpan scan_logprobs(JsonScanner& scanner) {
  LogprobSpan span;
  scanner.peek();
  span.begin = scanner.position();
  span.kind = scanner.next_kind();
  if (span.kind != "list") {
    scanner.skip_value();
  } else {
    scanner.for_each_element([&] {
      span.element_kinds.push_back(scanner.next_kind());
      int64_t size = 0;
      if (span.element_kinds.back() == "list") {
        scanner.for_each_element([&] {
          scanner.skip_value();
          ++size;
        });
      } else {
        scanner.skip_value();
      }
      span.element_sizes.push_back(size);
    });
  }
  span.end = scanner.position();
  return span;
}

[[noreturn]] void fail_syntax(const JsonSyntaxError& e, const LineContext& context) {
  context.fail("invalid JSON at column " + std::to_string(e.offset() + 1) + ": " + e.what());
}

LineLayout scan_layout(std::string_view line, const LineContext& context) {
  LineLayout layout;
  JsonScanner scanner(line);
  const auto keep = [&layout](std::optional<LogprobSpan>& slot, LogprobSpan span) {
    layout.blanked.emplace_back(span.begin, span.end);
    slot = std::move(span);
  };
  try {
    if (scanner.peek() != '{') {
      scanner.skip_value();
      context.fail_not_object(JsonScanner(line).next_kind());
    }
    scanner.for_each_member([&](const std::string& key) {
      if (key == "top_logprobs") return keep(layout.at_top, scan_logprobs(scanner));
      if (key != "choices" || scanner.peek() != '[') return scanner.skip_value();
      int64_t index = 0;
      scanner.for_each_element([&] {
        if (index++ != 0 || scanner.peek() != '{') return scanner.skip_value();
        scanner.for_each_member([&](const std::string& choice_key) {
          if (choice_key == "top_logprobs") return keep(layout.in_choice, scan_logprobs(scanner));
          scanner.skip_value();
        });
      });
    });
    scanner.expect_end();
  } catch (const JsonSyntaxError& e) {
    fail_syntax(e, context);
  }
  return layout;
}

// The line with every top_logprobs value replaced by null, parsed; an error names its column in
// the line.
json parse_without_logprobs(std::string_view line, const LineLayout& layout, const LineContext& context) {
  std::string rest;
  size_t from = 0;
  for (const auto& [begin, end] : layout.blanked) {
    rest.append(line.substr(from, begin - from)).append("null");
    from = end;
  }
  rest.append(line.substr(from));
  JsonError error;
  std::optional<json> parsed = parse_json(rest, error);
  if (parsed) return std::move(*parsed);
  if (error.column) {
    int64_t shift = 0;
    for (const auto& [begin, end] : layout.blanked)
      if (*error.column - 1 >= static_cast<int64_t>(begin) - shift + 4) shift += static_cast<int64_t>(end - begin) - 4;
    *error.column += shift;
  }
  context.fail("invalid JSON" + error.at(/*one_line=*/true));
}

const json* optional_member(const json& object, const char* field) {
  const auto it = object.find(field);
  return it == object.end() ? nullptr : &*it;
}

const json& required(const json& object, const char* field, const std::string& path, const LineContext& context) {
  const json* value = optional_member(object, field);
  if (value == nullptr) context.fail_field(path, "missing");
  return *value;
}

constexpr int64_t kMaxId = std::numeric_limits<int64_t>::max();

int64_t parse_token(const json& value, const std::string& field, const LineContext& context) {
  return context.integer(value, field, 0, kMaxId, "a token id (a non-negative integer)");
}

std::vector<int64_t> parse_tokens(const json& value, const std::string& field, const LineContext& context) {
  if (!value.is_array()) context.fail_type(field, "a list of token ids", value);
  std::vector<int64_t> tokens;
  tokens.reserve(value.size());
  for (const json& token : value) {
    // The common case first: building the field's name for every token costs more than the parse.
    if (const std::optional<int64_t> id = json_integer(token, 0, kMaxId)) {
      tokens.push_back(*id);
      continue;
    }
    tokens.push_back(parse_token(token, indexed(field, tokens.size()), context));
  }
  return tokens;
}

std::vector<std::string> parse_strings(const json& value, const std::string& field, const LineContext& context) {
  if (!value.is_array()) context.fail_type(field, "a list of strings", value);
  std::vector<std::string> strings;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) context.fail_type(indexed(field, i), "a string", value[i]);
    strings.push_back(value[i].get<std::string>());
  }
  return strings;
}


double parse_seconds(const json& value, const std::string& field, const LineContext& context) {
  if (!value.is_number()) context.fail_type(field, "a number", value);
  const double seconds = value.get<double>();
  if (!(seconds >= 0.0)) context.fail_field(field, "expected a number of seconds >= 0, got " + value.dump());
  return seconds;
}

// run.sampling: temperature (0: greedy) and, where they were set, top_k, top_p, min_p, seed and stream.
SamplingSettings parse_sampling(const json& sampling, const LineContext& context) {
  if (!sampling.is_object()) context.fail_type("run.sampling", "an object with temperature", sampling);
  const auto real = [&](const char* key, double low, double high, bool low_open) -> std::optional<double> {
    const json* value = optional_member(sampling, key);
    if (value == nullptr) return std::nullopt;
    const std::string field = std::string("run.sampling.") + key;
    if (!value->is_number()) context.fail_type(field, "a number", *value);
    const double number = value->get<double>();
    if (!(low_open ? number > low : number >= low) || !(number <= high))
      context.fail_field(field, value->dump() + " is out of range");
    return number;
  };
  SamplingSettings settings;
  const std::optional<double> temperature = real("temperature", 0.0, 1e6, false);
  if (!temperature) context.fail_field("run.sampling.temperature", "missing");
  settings.temperature = *temperature;
  settings.top_p = real("top_p", 0.0, 1.0, true);
  settings.min_p = real("min_p", 0.0, 1.0, false);
  if (const json* top_k = optional_member(sampling, "top_k"))
    settings.top_k = context.integer(*top_k, "run.sampling.top_k", 0, std::numeric_limits<int32_t>::max());
  if (const json* seed = optional_member(sampling, "seed")) {
    if (!seed->is_number_unsigned() && !(seed->is_number_integer() && seed->get<int64_t>() >= 0))
      context.fail_type("run.sampling.seed", "a non-negative integer", *seed);
    settings.seed = seed->get<uint64_t>();
  }
  if (const json* stream = optional_member(sampling, "stream")) {
    if (!stream->is_number_unsigned() && !(stream->is_number_integer() && stream->get<int64_t>() >= 0))
      context.fail_type("run.sampling.stream", "a non-negative integer", *stream);
    settings.stream = stream->get<uint64_t>();
  }
  return settings;
}

RunInfo parse_run(const json& run, const LineContext& context) {
  if (!run.is_object()) context.fail_type("run", "an object with engine, batch_size and started_at", run);
  const auto member = [&](const char* key) -> const json& {
    const auto it = run.find(key);
    if (it == run.end()) context.fail_field(std::string("run.") + key, "missing");
    return *it;
  };
  const json& engine = member("engine");
  if (!engine.is_string()) context.fail_type("run.engine", "a string", engine);
  constexpr int64_t kLargest = std::numeric_limits<int32_t>::max();
  RunInfo info{.engine = engine.get<std::string>(),
               .batch_size = context.integer(member("batch_size"), "run.batch_size", 1, kLargest),
               .started_at = parse_seconds(member("started_at"), "run.started_at", context)};
  if (const json* server = optional_member(run, "server")) {
    if (!server->is_string()) context.fail_type("run.server", "a string", *server);
    info.server = server->get<std::string>();
  }
  if (const json* tokens = optional_member(run, "max_new_tokens"))
    info.max_new_tokens = context.integer(*tokens, "run.max_new_tokens", 1, kLargest);
  if (const json* k = optional_member(run, "draft_tokens")) info.draft_tokens = context.integer(*k, "run.draft_tokens", 1, kLargest);
  if (const json* window = optional_member(run, "window")) info.window = context.integer(*window, "run.window", 1, kLargest);
  if (const json* drafter = optional_member(run, "drafter")) {
    if (!drafter->is_string() || (*drafter != "model" && *drafter != "ngram"))
      context.fail_type("run.drafter", "\"model\" or \"ngram\"", *drafter);
    info.drafter = drafter->get<std::string>();
  }
  if (const json* ngram = optional_member(run, "ngram")) {
    if (!ngram->is_object()) context.fail_type("run.ngram", "an object", *ngram);
    const json* min = optional_member(*ngram, "min");
    const json* max = optional_member(*ngram, "max");
    if (min == nullptr || max == nullptr) context.fail_type("run.ngram", "an object with min and max", *ngram);
    info.ngram_min = context.integer(*min, "run.ngram.min", 1, 64);
    info.ngram_max = context.integer(*max, "run.ngram.max", *info.ngram_min, 64);
  }
  if (const json* sampling = optional_member(run, "sampling")) info.sampling = parse_sampling(*sampling, context);
  if (const json* dtype = optional_member(run, "dtype")) {
    if (!dtype->is_string()) context.fail_type("run.dtype", "a string", *dtype);
    info.dtype = dtype->get<std::string>();
  }
  return info;
}

int64_t parse_count(const json& value, const std::string& field, const LineContext& context) {
  const bool fits = value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
  if (!fits) context.fail_type(field, "a non-negative integer", value);
  if (value.get<uint64_t>() > uint64_t{std::numeric_limits<int32_t>::max()})
    context.fail_field(field, value.dump() + " is out of range");
  return value.get<int64_t>();
}

// true or false, as 1 or 0 so that turns can be counted.
int64_t parse_flag(const json& value, const std::string& field, const LineContext& context) {
  if (!value.is_boolean()) context.fail_type(field, "true or false", value);
  return value.get<bool>() ? 1 : 0;
}

// A speed field of choices[0] with one number per turn: those of the first `kept` turns.
template <typename T, typename Parse>
std::optional<std::vector<T>> per_turn(const json& choice, const char* name, size_t kept, Parse parse,
                                       const LineContext& context) {
  const json* value = optional_member(choice, name);
  if (value == nullptr) return std::nullopt;
  const std::string field = std::string("choices[0].") + name;
  if (!value->is_array()) context.fail_type(field, "a list with one number per turn", *value);
  std::vector<T> numbers;
  for (size_t i = 0; i < value->size(); ++i) {
    const T number = parse((*value)[i], indexed(field, i), context);
    if (i < kept) numbers.push_back(number);
  }
  return numbers;
}

template <typename T>
std::optional<T> sum_of(const std::optional<std::vector<T>>& numbers) {
  if (!numbers) return std::nullopt;
  return std::accumulate(numbers->begin(), numbers->end(), T{0});
}

// accept_lengths: flat (one entry per target pass over all turns, as Spec-Bench writes it) or
// one list per turn. A flat list is used only when every turn of the answer is scored.
void parse_accept_lengths(const json& choice, size_t turns, size_t kept, const LineContext& context, AnswerSpeed& speed) {
  const json* value = optional_member(choice, "accept_lengths");
  if (value == nullptr) return;
  const std::string field = "choices[0].accept_lengths";
  if (!value->is_array()) context.fail_type(field, "a list of numbers, or one list per turn", *value);
  const bool per_turn = !value->empty() && value->front().is_array();
  if (per_turn && value->size() != turns)
    context.fail_field(field, "has " + std::to_string(value->size()) + " lists for " + std::to_string(turns) + " turns");
  if (per_turn || turns == 1) speed.accept_lengths.emplace(kept);
  const auto add = [&](const json& length, const std::string& at, size_t turn) {
    const int64_t appended = parse_count(length, at, context);
    speed.accepted_tokens += appended;
    ++speed.accept_steps;
    if (speed.accept_lengths) (*speed.accept_lengths)[turn].push_back(appended);
  };
  for (size_t i = 0; i < value->size(); ++i) {
    const json& entry = (*value)[i];
    const std::string at = indexed(field, i);
    if (!per_turn) {
      if (entry.is_array()) context.fail_type(at, "a number (the list's first entry is one)", entry);
      if (kept == turns) add(entry, at, 0);
      else parse_count(entry, at, context);
      continue;
    }
    if (!entry.is_array()) context.fail_type(at, "a list (the list's first entry is one)", entry);
    for (size_t j = 0; j < entry.size(); ++j) {
      if (i < kept) add(entry[j], indexed(at, j), i);
      else parse_count(entry[j], indexed(at, j), context);
    }
  }
}

// round_drafts: one list per turn, as long as that turn's accept_lengths, each entry within
// what the step appended less one (its accepted drafts) and up.
void parse_round_drafts(const json& choice, size_t kept, const LineContext& context, AnswerSpeed& speed) {
  speed.round_drafts = per_turn<std::vector<int64_t>>(choice, "round_drafts", kept, [&](const json& value, const std::string& field,
                                                                                        const LineContext&) {
    if (!value.is_array()) context.fail_type(field, "a list with one count per entry of accept_lengths", value);
    std::vector<int64_t> counts;
    for (size_t i = 0; i < value.size(); ++i) counts.push_back(parse_count(value[i], indexed(field, i), context));
    return counts;
  }, context);
  if (!speed.round_drafts) return;
  if (!speed.accept_lengths) context.fail_field("choices[0].round_drafts", "needs accept_lengths, one list per turn");
  for (size_t turn = 0; turn < speed.round_drafts->size(); ++turn) {
    const std::vector<int64_t>& drafts = (*speed.round_drafts)[turn];
    const std::vector<int64_t>& lengths = (*speed.accept_lengths)[turn];
    const std::string field = indexed("choices[0].round_drafts", turn);
    if (drafts.size() != lengths.size())
      context.fail_field(field, "has " + std::to_string(drafts.size()) + " entries for " + std::to_string(lengths.size()) +
                                    " of accept_lengths");
    for (size_t i = 0; i < drafts.size(); ++i) {
      if (lengths[i] - 1 > drafts[i])
        context.fail_field(indexed(field, i), std::to_string(drafts[i]) + " drafts, yet the step appended " +
                                                  std::to_string(lengths[i]) + " tokens");
    }
  }
}

// chunk_seconds and chunk_tokens: one list per turn, one entry per chunk, the seconds in the
// order the chunks came.
std::optional<std::vector<StreamRecord>> parse_streams(const json& choice, size_t kept, const LineContext& context) {
  const auto lists = [&](const char* name, auto parse_entry) {
    using Entry = decltype(parse_entry(json(), std::string()));
    return per_turn<std::vector<Entry>>(choice, name, kept, [&](const json& value, const std::string& field, const LineContext&) {
      if (!value.is_array()) context.fail_type(field, "a list with one entry per chunk", value);
      std::vector<Entry> entries;
      for (size_t i = 0; i < value.size(); ++i) entries.push_back(parse_entry(value[i], indexed(field, i)));
      return entries;
    }, context);
  };
  const auto seconds = lists("chunk_seconds", [&](const json& v, const std::string& f) { return parse_seconds(v, f, context); });
  const auto tokens = lists("chunk_tokens", [&](const json& v, const std::string& f) { return parse_count(v, f, context); });
  if (!seconds) {
    if (tokens) context.fail_field("choices[0].chunk_tokens", "needs chunk_seconds");
    return std::nullopt;
  }
  std::vector<StreamRecord> streams(seconds->size());
  for (size_t t = 0; t < seconds->size(); ++t) {
    streams[t].chunk_seconds = (*seconds)[t];
    if (!std::is_sorted(streams[t].chunk_seconds.begin(), streams[t].chunk_seconds.end()))
      context.fail_field(indexed("choices[0].chunk_seconds", t), "goes back in time: chunks are listed in the order they came");
    if (!tokens) continue;
    if (t >= tokens->size() || (*tokens)[t].size() != streams[t].chunk_seconds.size())
      context.fail_field(indexed("choices[0].chunk_tokens", t), "needs one count per entry of chunk_seconds");
    streams[t].chunk_tokens = (*tokens)[t];
  }
  return streams;
}

AnswerSpeed parse_speed(const json& choice, size_t turns, size_t kept, const LineContext& context) {
  AnswerSpeed speed;
  speed.wall_time = sum_of(per_turn<double>(choice, "wall_time", kept, parse_seconds, context));
  speed.new_tokens = sum_of(per_turn<int64_t>(choice, "new_tokens", kept, parse_count, context));
  speed.decoding_steps = sum_of(per_turn<int64_t>(choice, "decoding_steps", kept, parse_count, context));
  speed.drafted_tokens = sum_of(per_turn<int64_t>(choice, "drafted_tokens", kept, parse_count, context));
  speed.turn_accepted_drafts = per_turn<int64_t>(choice, "accepted_drafts", kept, parse_count, context);
  speed.accepted_drafts = sum_of(speed.turn_accepted_drafts);
  speed.ragged_rounds = sum_of(per_turn<int64_t>(choice, "ragged_rounds", kept, parse_count, context));
  speed.realignments = sum_of(per_turn<int64_t>(choice, "realignments", kept, parse_count, context));
  speed.finished_early = sum_of(per_turn<int64_t>(choice, "finished_early", kept, parse_flag, context));
  parse_accept_lengths(choice, turns, kept, context, speed);
  parse_round_drafts(choice, kept, context, speed);
  speed.streams = parse_streams(choice, kept, context);
  if (speed.drafted_tokens && speed.accepted_drafts && *speed.accepted_drafts > *speed.drafted_tokens)
    context.fail_field("choices[0].accepted_drafts", "more accepted drafts (" + std::to_string(*speed.accepted_drafts) +
                                                         ") than drafted_tokens (" + std::to_string(*speed.drafted_tokens) + ")");
  return speed;
}

// top_logprobs holds one entry per generated token: `sizes[t]` entries for turn t when
// `per_turn`, else one flat list of sizes[0] entries.
void check_logprob_shape(const LogprobSpan& span, const std::string& field, bool per_turn,
                         const std::vector<std::vector<int64_t>>* token_ids, const LineContext& context) {
  if (token_ids == nullptr) context.fail_field(field, "needs token_ids (log-probabilities are per token)");
  if (span.kind != "list") context.fail_field(field, "expected a list, got " + span.kind);
  const auto count = [](size_t n, const char* what) { return std::to_string(n) + " " + what; };
  if (!per_turn) {
    if (span.element_kinds.size() != token_ids->front().size())
      context.fail_field(field, "has " + count(span.element_kinds.size(), "entries") + " for " +
                                    count(token_ids->front().size(), "token ids"));
    for (size_t i = 0; i < span.element_kinds.size(); ++i) {
      if (span.element_kinds[i] != "list") context.fail_field(indexed(field, i), "expected a list, got " + span.element_kinds[i]);
    }
    return;
  }
  if (span.element_kinds.size() != token_ids->size())
    context.fail_field(field, "has " + count(span.element_kinds.size(), "lists") + " for " + count(token_ids->size(), "turns"));
  for (size_t t = 0; t < span.element_kinds.size(); ++t) {
    const std::string turn_field = indexed(field, t);
    if (span.element_kinds[t] != "list") context.fail_field(turn_field, "expected a list, got " + span.element_kinds[t]);
    if (static_cast<size_t>(span.element_sizes[t]) != (*token_ids)[t].size())
      context.fail_field(turn_field, "has " + count(span.element_sizes[t], "entries") + " for " +
                                         count((*token_ids)[t].size(), "token ids"));
  }
}

int64_t total_tokens(const std::vector<std::vector<int64_t>>& turns, size_t kept) {
  int64_t total = 0;
  for (size_t t = 0; t < turns.size() && t < kept; ++t) total += static_cast<int64_t>(turns[t].size());
  return total;
}

void parse_choice(const json& object, const LineLayout& layout, TurnScope scope, const LineContext& context,
                  AnswerRecord& record) {
  const json& choices = object["choices"];
  if (!choices.is_array()) context.fail_type("choices", "a list", choices);
  if (choices.empty()) context.fail_field("choices", "expected at least one choice, got an empty list");
  const json& choice = choices[0];
  if (!choice.is_object()) context.fail_type("choices[0]", "an object", choice);
  if (const json* index = optional_member(choice, "index"); index != nullptr && !index->is_number_integer())
    context.ignore_type("choices[0].index", "an integer", *index);
  std::vector<std::string> turns = parse_strings(required(choice, "turns", "choices[0].turns", context), "choices[0].turns", context);
  if (turns.empty()) context.fail_field("choices[0].turns", "expected at least one turn, got an empty list");
  const size_t kept = scope == TurnScope::kFirst ? 1 : turns.size();
  record.speed = parse_speed(choice, turns.size(), kept, context);

  const auto per_turn_tokens = [&](const char* field) -> std::optional<std::vector<std::vector<int64_t>>> {
    const json* ids = optional_member(choice, field);
    if (ids == nullptr) return std::nullopt;
    const std::string path = std::string("choices[0].") + field;
    if (!ids->is_array()) context.fail_type(path, "a list with one list of token ids per turn", *ids);
    if (ids->size() != turns.size())
      context.fail_field(path, "has " + std::to_string(ids->size()) + " lists for " + std::to_string(turns.size()) + " turns");
    std::vector<std::vector<int64_t>> per_turn;
    for (size_t t = 0; t < ids->size(); ++t) per_turn.push_back(parse_tokens((*ids)[t], indexed(path, t), context));
    return per_turn;
  };
  record.token_ids = per_turn_tokens("token_ids");
  record.prompt_token_ids = per_turn_tokens("prompt_token_ids");
  if (record.token_ids && !record.speed.new_tokens) record.speed.new_tokens = total_tokens(*record.token_ids, kept);
  if (layout.in_choice) {
    check_logprob_shape(*layout.in_choice, "choices[0].top_logprobs", /*per_turn=*/true,
                        record.token_ids ? &*record.token_ids : nullptr, context);
    record.has_top_logprobs = true;
  }
  record.texts = std::move(turns);
}

void parse_plain(const json& object, const LineLayout& layout, const LineContext& context, AnswerRecord& record) {
  record.plain_form = true;
  const json* ids = optional_member(object, "token_ids");
  const json* text = optional_member(object, "text");
  if (ids == nullptr && text == nullptr)
    context.fail_field("token_ids", "missing (a plain answer has token_ids and/or text; a Spec-Bench answer has choices)");
  if (ids != nullptr) record.token_ids = std::vector<std::vector<int64_t>>{parse_tokens(*ids, "token_ids", context)};
  if (const json* prompt = optional_member(object, "prompt_token_ids"))
    record.prompt_token_ids = std::vector<std::vector<int64_t>>{parse_tokens(*prompt, "prompt_token_ids", context)};
  if (text != nullptr) {
    if (!text->is_string()) context.fail_type("text", "a string", *text);
    record.texts = std::vector<std::string>{text->get<std::string>()};
  }
  if (layout.at_top) {
    check_logprob_shape(*layout.at_top, "top_logprobs", /*per_turn=*/false, record.token_ids ? &*record.token_ids : nullptr,
                        context);
    record.has_top_logprobs = true;
  }
}

// The turns the line holds, before any are dropped.
size_t turn_count_of(const AnswerRecord& record) {
  if (record.texts) return record.texts->size();
  return record.token_ids ? record.token_ids->size() : 0;
}

template <typename T>
void keep_first_turn(std::optional<std::vector<T>>& turns) {
  if (turns && turns->size() > 1) turns->resize(1);
}

// The [begin, end) of element `index` of the list that starts at the scanner's position.
std::pair<size_t, size_t> locate_element(JsonScanner& scanner, int64_t index) {
  std::optional<std::pair<size_t, size_t>> found;
  int64_t i = 0;
  scanner.for_each_element([&] {
    scanner.peek();
    const size_t begin = scanner.position();
    scanner.skip_value();
    if (i++ == index) found.emplace(begin, scanner.position());
  });
  if (!found) throw std::out_of_range("no element " + std::to_string(index));
  return *found;
}

std::vector<TokenLogprob> parse_alternatives(const json& value, const std::string& field, const LineContext& context) {
  if (!value.is_array()) context.fail_type(field, "a list of {\"token_id\", \"logprob\"} objects", value);
  std::vector<TokenLogprob> alternatives;
  for (size_t k = 0; k < value.size(); ++k) {
    const std::string entry = indexed(field, k);
    if (!value[k].is_object()) context.fail_type(entry, "an object with token_id and logprob", value[k]);
    const int64_t token = parse_token(required(value[k], "token_id", entry + ".token_id", context), entry + ".token_id", context);
    const json& logprob = required(value[k], "logprob", entry + ".logprob", context);
    if (!logprob.is_number()) context.fail_type(entry + ".logprob", "a number", logprob);
    if (logprob.get<double>() > kMostLogprobAboveZero)
      context.fail_field(entry + ".logprob", "log-probability " + logprob.dump() + " is above 0");
    alternatives.push_back({token, logprob.get<double>()});
  }
  return alternatives;
}

}  // namespace

AnswerRecord parse_answer_line(std::string_view line, const std::string& source, int64_t line_number, TurnScope scope) {
  const LineContext context(source, line_number);
  const LineLayout layout = scan_layout(line, context);
  const json object = parse_without_logprobs(line, layout, context);
  AnswerRecord record;
  record.line = line_number;
  record.question_id = context.integer(required(object, "question_id", "question_id", context), "question_id",
                                       std::numeric_limits<int64_t>::min(), kMaxId);
  if (const json* chat_template = optional_member(object, "chat_template")) {
    if (!chat_template->is_string()) context.fail_type("chat_template", "a string", *chat_template);
    record.chat_template = chat_template->get<std::string>();
  }
  if (const json* category = optional_member(object, "category")) {
    if (!category->is_string()) context.fail_type("category", "a string", *category);
    record.category = category->get<std::string>();
  }
  // Spec-Bench's bookkeeping, which scoring does not use.
  for (const char* field : {"answer_id", "model_id"}) {
    if (const json* value = optional_member(object, field); value != nullptr && !value->is_string())
      context.ignore_type(field, "a string", *value);
  }
  const json* tstamp = optional_member(object, "tstamp");
  if (tstamp != nullptr && !tstamp->is_number()) context.ignore_type("tstamp", "a number", *tstamp);
  if (object.contains("choices")) {
    parse_choice(object, layout, scope, context, record);
  } else {
    parse_plain(object, layout, context, record);
  }
  if (const json* run = optional_member(object, "run")) record.speed.run = parse_run(*run, context);
  const bool every_turn = scope == TurnScope::kAll || turn_count_of(record) == 1;
  if (tstamp != nullptr && tstamp->is_number() && tstamp->get<double>() > 0.0 && every_turn)
    record.speed.finished_at = tstamp->get<double>();
  if (scope == TurnScope::kFirst) {
    keep_first_turn(record.texts);
    keep_first_turn(record.token_ids);
    keep_first_turn(record.prompt_token_ids);
  }
  return record;
}

std::vector<TokenLogprob> recorded_alternatives(std::string_view line, const std::string& source, int64_t line_number,
                                                int64_t turn, int64_t index) {
  const LineContext context(source, line_number);
  const LineLayout layout = scan_layout(line, context);
  const bool per_turn = layout.in_choice.has_value();
  const std::optional<LogprobSpan>& span = per_turn ? layout.in_choice : layout.at_top;
  const std::string field = per_turn ? "choices[0].top_logprobs" : "top_logprobs";
  if (!span || (!per_turn && turn != 0)) context.fail_field(field, "missing");
  if (span->kind != "list") context.fail_field(field, "expected a list, got " + span->kind);
  std::pair<size_t, size_t> entry;
  std::string entry_field = field;
  try {
    JsonScanner scanner(line, span->begin);
    if (per_turn) {
      const auto [turn_begin, turn_end] = locate_element(scanner, turn);
      scanner = JsonScanner(line, turn_begin);
      entry_field = indexed(entry_field, turn);
    }
    entry = locate_element(scanner, index);
    entry_field = indexed(entry_field, index);
  } catch (const std::out_of_range&) {
    context.fail_field(entry_field, "has no entry for token " + std::to_string(index) + " of turn " + std::to_string(turn));
  } catch (const JsonSyntaxError& e) {
    fail_syntax(e, context);
  }
  return parse_alternatives(context.parse(line.substr(entry.first, entry.second - entry.first), entry.first), entry_field, context);
}

std::string answer_location(const std::filesystem::path& file, int64_t line) {
  return file.string() + ":" + std::to_string(line);
}

void check_rescorable_turn(const AnswerRecord& record, size_t turn, int64_t vocabulary, const std::string& at) {
  const std::string of_turn = record.token_ids->size() > 1 ? " of turn " + std::to_string(turn) : "";
  if ((*record.prompt_token_ids)[turn].empty())
    throw InputError(at + ": field 'prompt_token_ids': the prompt" + of_turn + " is empty; re-scoring needs its tokens");
  for (const char* field : {"prompt_token_ids", "token_ids"}) {
    const auto& ids = std::string_view(field) == "token_ids" ? *record.token_ids : *record.prompt_token_ids;
    for (const int64_t id : ids[turn]) {
      if (id < 0 || id >= vocabulary)
        throw InputError(at + ": field '" + field + "': token " + std::to_string(id) + of_turn +
                         " is outside the target's vocabulary of " + std::to_string(vocabulary));
    }
  }
}

AnswerReader::AnswerReader(const std::filesystem::path& path, TurnScope scope)
    : reader_(path), scope_(scope), source_(path.string()) {}

std::optional<AnswerRecord> AnswerReader::next() {
  while (reader_.next(line_)) {
    if (line_.find_first_not_of(" \t") == std::string::npos) continue;
    AnswerRecord record = parse_answer_line(line_, source_, reader_.line_number(), scope_);
    record.offset = reader_.line_offset();
    ++answers_;
    return record;
  }
  return std::nullopt;
}

int64_t count_answers(std::span<const std::filesystem::path> paths) {
  int64_t answers = 0;
  for (const std::filesystem::path& path : paths) {
    std::ifstream in(path, std::ios::binary);
    for (std::string line; std::getline(in, line);)
      answers += line.find_first_not_of(" \t\r") != std::string::npos;
  }
  return answers;
}

std::vector<std::vector<int64_t>> rescorable_sequences(const std::filesystem::path& path, TurnScope scope) {
  std::vector<std::vector<int64_t>> sequences;
  AnswerReader reader(path, scope);
  while (const std::optional<AnswerRecord> record = reader.next()) {
    if (!record->token_ids || !record->prompt_token_ids) continue;
    for (size_t turn = 0; turn < record->token_ids->size() && turn < record->prompt_token_ids->size(); ++turn) {
      const std::vector<int64_t>& generated = (*record->token_ids)[turn];
      if (generated.empty()) continue;
      std::vector<int64_t>& sequence = sequences.emplace_back((*record->prompt_token_ids)[turn]);
      sequence.insert(sequence.end(), generated.begin(), generated.end());
    }
  }
  return sequences;
}

}  // namespace specgate
