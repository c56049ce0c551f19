#include "conformance/collect/server_counters.h"

#include <charconv>
#include <cmath>
#include <algorithm>
#include <map>

#include "impl/common/counted.h"
#include "impl/reports/report_text.h"

namespace specgate::cli {
namespace {

struct Sample {
  std::string_view name, labels;  // labels: between the braces, empty without
  double value = 0.0;
};

// One sample line, "name{labels} value [timestamp]".
std::optional<Sample> sample(std::string_view line) {
  if (line.empty() || line.front() == '#') return std::nullopt;
  size_t end = line.find_first_of("{ \t");
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view name = line.substr(0, end);
  std::string_view labels;
  if (line[end] == '{') {
    const size_t open = end;
    bool quoted = false;
    for (++end; end < line.size(); ++end) {
      if (quoted && line[end] == '\\') ++end;
      else if (line[end] == '"') quoted = !quoted;
      else if (!quoted && line[end] == '}') break;
    }
    if (end >= line.size()) return std::nullopt;
    labels = line.substr(open + 1, end - open - 1);
    ++end;
  }
  std::string_view rest = line.substr(end);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  rest = rest.substr(0, rest.find_first_of(" \t"));
  double value = 0.0;
  const auto [ptr, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (error != std::errc() || ptr != rest.data() + rest.size() || !std::isfinite(value) || value < 0) return std::nullopt;
  return Sample{name, labels, value};
}

// The value of label `key` in `a="x",b="y"`, where it is a non-negative integer; values may hold
// escaped quotes, commas and other label names.
std::optional<int64_t> integer_label(std::string_view labels, std::string_view key) {
  while (!labels.empty()) {
    const size_t equals = labels.find("=\"");
    if (equals == std::string_view::npos) return std::nullopt;
    const std::string_view name = labels.substr(0, equals);
    size_t end = equals + 2;
    std::string value;
    for (; end < labels.size() && labels[end] != '"'; ++end) {
      if (labels[end] == '\\') ++end;
      if (end < labels.size()) value += labels[end];
    }
    if (end >= labels.size()) return std::nullopt;
    if (name == key) {
      int64_t number = 0;
      const auto [ptr, error] = std::from_chars(value.data(), value.data() + value.size(), number);
      if (error != std::errc() || ptr != value.data() + value.size() || value.empty() || number < 0) return std::nullopt;
      return number;
    }
    labels.remove_prefix(std::min(labels.size(), end + 1));
    if (!labels.empty() && labels.front() == ',') labels.remove_prefix(1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<SpeculationCounters> counted_between(const SpeculationCounters& before, const SpeculationCounters& after) {
  bool went_back = false;
  const auto added = [&went_back](int64_t earlier, int64_t later) {
    went_back = went_back || later < earlier;
    return later - earlier;
  };
  const auto added_optional = [&](const std::optional<int64_t>& earlier, const std::optional<int64_t>& later) {
    return earlier && later ? std::optional(added(*earlier, *later)) : std::nullopt;
  };
  SpeculationCounters run{added(before.drafts, after.drafts), added(before.draft_tokens, after.draft_tokens),
                          added(before.accepted_tokens, after.accepted_tokens),
                          added_optional(before.ragged_rounds, after.ragged_rounds),
                          added_optional(before.realignments, after.realignments)};
  for (size_t j = 0; j < after.accepted_per_position.size(); ++j)
    run.accepted_per_position.push_back(
        added(j < before.accepted_per_position.size() ? before.accepted_per_position[j] : 0, after.accepted_per_position[j]));
  if (went_back) return std::nullopt;
  return run;
}

std::optional<SpeculationCounters> parse_speculation_counters(std::string_view text) {
  std::map<std::string_view, double> sums;
  std::map<int64_t, double> per_position;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const auto found = sample(line)) {
      sums[found->name] += found->value;
      if (found->name == "vllm:spec_decode_num_accepted_tokens_per_pos_total") {
        if (const auto position = integer_label(found->labels, "position"); position && *position < 1024)
          per_position[*position] += found->value;
      }
    }
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  const auto count = [&sums](std::string_view name) -> std::optional<int64_t> {
    const auto found = sums.find(name);
    if (found == sums.end()) return std::nullopt;
    return static_cast<int64_t>(std::llround(found->second));
  };
  const std::optional<int64_t> draft_tokens = count("vllm:spec_decode_num_draft_tokens_total");
  const std::optional<int64_t> accepted = count("vllm:spec_decode_num_accepted_tokens_total");
  if (!draft_tokens || !accepted) return std::nullopt;
  SpeculationCounters counters{count("vllm:spec_decode_num_drafts_total").value_or(0), *draft_tokens, *accepted,
                                count("specgate:ragged_rounds_total"), count("specgate:realignments_total")};
  if (!per_position.empty()) {
    counters.accepted_per_position.resize(static_cast<size_t>(per_position.rbegin()->first) + 1);
    for (const auto& [position, value] : per_position)
      counters.accepted_per_position[static_cast<size_t>(position)] = static_cast<int64_t>(std::llround(value));
  }
  return counters;
}

std::optional<SpeculationCounters> read_speculation_counters(const Endpoint& endpoint) {
  HttpClient client(endpoint, {.timeout_seconds = 10.0, .max_response_bytes = int64_t{16} << 20});
  const HttpResponse page = client.get("/metrics");
  if (page.status != 200) return std::nullopt;
  return parse_speculation_counters(page.body);
}

std::string counters_line(const SpeculationCounters& c) {
  std::string line = "server counters (GET /metrics): " + counted(c.drafts, "draft") + ", " +
                     std::to_string(c.accepted_tokens) + " of " + counted(c.draft_tokens, "draft token") + " accepted";
  if (c.draft_tokens > 0)
    line += " (accepted/drafted " + percent(static_cast<double>(c.accepted_tokens) / static_cast<double>(c.draft_tokens)) + ")";
  if (c.ragged_rounds) line += ", " + counted(*c.ragged_rounds, "ragged round");
  if (c.realignments) line += ", " + counted(*c.realignments, "realignment");
  if (c.accepted_per_position.empty()) return line;
  std::string counts, rates;
  for (size_t j = 0; j < c.accepted_per_position.size(); ++j) {
    counts += (j > 0 ? ", " : "") + std::to_string(c.accepted_per_position[j]);
    if (c.drafts > 0)
      rates += (j > 0 ? ", " : "") +
               percent(static_cast<double>(c.accepted_per_position[j]) / static_cast<double>(c.drafts));
  }
  line += "; accepted at draft positions 1-" + std::to_string(c.accepted_per_position.size()) + ": " + counts;
  if (c.drafts > 0) line += " (of " + counted(c.drafts, "draft") + ": " + rates + ")";
  return line;
}

}  // namespace specgate::cli
