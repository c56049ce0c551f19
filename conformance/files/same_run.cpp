#include "conformance/files/same_run.h"

#include <algorithm>
#include <string>
#include <vector>

namespace specgate::cli {
namespace {

using nlohmann::json;
using Path = std::vector<std::string>;  // keys from the answer line down to a setting

// The settings in the order a difference is named.
const std::vector<Path> kOrder = {
    {"run", "engine"},     {"run", "server"},      {"model_id"},             {"run", "draft"},       {"run", "dtype"},
    {"run", "sampling", "temperature"}, {"run", "sampling", "top_k"}, {"run", "sampling", "top_p"},
    {"run", "sampling", "min_p"},       {"run", "sampling", "seed"},  {"chat_template"},
    {"run", "max_new_tokens"}, {"run", "drafter"},     {"run", "draft_tokens"}, {"run", "ngram"},
    {"run", "tree"},       {"run", "window"},      {"run", "batch_size"}};

// Not settings: when the run started, each answer's own random stream, and the objects that hold
// the settings.
bool is_setting(const Path& path) {
  return path != Path{"run", "started_at"} && path != Path{"run", "sampling", "stream"} && path != Path{"run", "sampling"};
}

// The value at `path` in `line`; null when it has none.
const json* find(const json& line, const Path& path) {
  const json* value = &line;
  for (const std::string& key : path) {
    if (!value->is_object()) return nullptr;
    const auto found = value->find(key);
    if (found == value->end()) return nullptr;
    value = &*found;
  }
  return value;
}

// Every key of the objects at `object` in `a` and `b`, as paths, after those in `paths`.
void add_keys(const json& a, const json& b, const Path& object, std::vector<Path>& paths) {
  for (const json* line : {&a, &b}) {
    const json* at = find(*line, object);
    if (at == nullptr || !at->is_object()) continue;
    for (const auto& [key, value] : at->items()) {
      Path path = object;
      path.push_back(key);
      if (is_setting(path) && std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(std::move(path));
    }
  }
}

std::string field_name(const Path& path) {
  std::string name;
  for (const std::string& key : path) name += (name.empty() ? "" : ".") + key;
  return name;
}

// A value for a message, cut short past 60 characters.
std::string shown(const json* value) {
  if (value == nullptr) return "none";
  const std::string text = value->dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

}  // namespace

void check_same_run(const json& recorded, const json& expected, const LineContext& line) {
  const json* run = find(recorded, {"run"});
  if (run == nullptr || !run->is_object())
    line.fail_field("run", "this line records no run settings; --resume continues the answers of one run");
  const bool before_draft_recorded = run->value("drafter", json()) == "model" && !run->contains("draft");
  std::vector<Path> paths = kOrder;
  add_keys(recorded, expected, {"run"}, paths);
  add_keys(recorded, expected, {"run", "sampling"}, paths);
  for (const Path& path : paths) {
    const json *here = find(recorded, path), *wanted = find(expected, path);
    if (path == Path{"chat_template"} && here == nullptr) continue;
    if (before_draft_recorded && (path == Path{"run", "draft"} || path == Path{"run", "tree"})) continue;
    const bool same = here == nullptr ? wanted == nullptr : wanted != nullptr && *here == *wanted;
    if (!same)
      line.fail_field(field_name(path), shown(here) + " here, " + shown(wanted) +
                                            " in this run: --resume continues a run with the settings it began with");
  }
}

}  // namespace specgate::cli
