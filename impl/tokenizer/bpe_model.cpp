#include "impl/tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <queue>

namespace specgate {
namespace {

size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// The two tokens of one merge, written "a b" or ["a", "b"].
std::pair<std::string, std::string> merge_parts(const JsonNode& merge) {
  if (merge.value().is_array()) {
    if (merge.size() != 2) merge.fail("expected two tokens");
    return {merge[0].string(), merge[1].string()};
  }
  const std::string line = merge.string();
  const size_t space = line.find(' ');
  if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
    merge.fail("expected two tokens separated by one space");
  return {line.substr(0, space), line.substr(space + 1)};
}

}  // namespace

BpeModel::BpeModel(BpeModel&& other) noexcept
    : vocab_(std::move(other.vocab_)),
      tokens_(std::move(other.tokens_)),
      max_id_(other.max_id_),
      merges_(std::move(other.merges_)),
      ignore_merges_(other.ignore_merges_),
      byte_fallback_(other.byte_fallback_),
      unk_id_(other.unk_id_),
      fuse_unk_(other.fuse_unk_) {}

BpeModel BpeModel::from_json(const JsonNode& json) {
  const std::string type = json.string_or("type", "BPE");
  if (type != "BPE") json.unsupported(type);
  if (const std::optional<JsonNode> dropout = json.find("dropout"))
    if (!dropout->value().is_number() || dropout->value().get<double>() != 0.0) dropout->fail("dropout is not supported");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!json.string_or(affix, "").empty()) json[affix].fail("only null or \"\" is supported");

  BpeModel model;
  const JsonNode vocab = json["vocab"];
  if (!vocab.value().is_object()) vocab.fail("expected an object of token: id");
  model.vocab_.reserve(vocab.value().size());
  model.tokens_.reserve(vocab.value().size());
  for (const auto& [token, id_json] : vocab.value().items()) {
    const JsonNode id_node = vocab.child(id_json, token);
    const int64_t id = id_node.integer();
    if (id < 0 || id > INT32_MAX) id_node.fail("out of range");
    model.vocab_.emplace(token, id);
    model.tokens_[id] = token;
    model.max_id_ = std::max(model.max_id_, id);
  }

  const JsonNode merges = json["merges"];
  model.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const JsonNode merge = merges[rank];
    const auto [left, right] = merge_parts(merge);
    const std::optional<int64_t> left_id = model.token_id(left), right_id = model.token_id(right),
                                 merged_id = model.token_id(left + right);
    if (!left_id || !right_id || !merged_id) merge.fail("a token of this merge is not in the vocabulary");
    model.merges_.try_emplace(pair_key(*left_id, *right_id), Merge{static_cast<int32_t>(rank), static_cast<int32_t>(*merged_id)});
  }

  model.ignore_merges_ = json.boolean_or("ignore_merges", false);
  model.byte_fallback_ = json.boolean_or("byte_fallback", false);
  model.fuse_unk_ = json.boolean_or("fuse_unk", false);
  if (const std::optional<JsonNode> unk = json.find("unk_token")) {
    model.unk_id_ = model.token_id(unk->string());
    if (!model.unk_id_) unk->fail("not in the vocabulary");
  }
  return model;
}

std::optional<int64_t> BpeModel::token_id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::token(int64_t id) const {
  const auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

std::vector<int64_t> BpeModel::initial_symbols(std::string_view word) const {
  std::vector<int64_t> symbols;
  bool pending_unk = false;
  for (size_t at = 0; at < word.size();) {
    const std::string_view character = word.substr(at, utf8_length(static_cast<unsigned char>(word[at])));
    at += character.size();
    if (const std::optional<int64_t> id = token_id(character)) {
      if (pending_unk) symbols.push_back(*unk_id_);
      pending_unk = false;
      symbols.push_back(*id);
      continue;
    }
    if (byte_fallback_) {
      std::vector<int64_t> bytes;
      for (unsigned char byte : character) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", byte);
        if (const std::optional<int64_t> id = token_id(name)) bytes.push_back(*id);
        else break;
      }
      if (bytes.size() == character.size()) {  // the Rust library leaves a pending unknown pending here
        symbols.insert(symbols.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (!unk_id_) continue;
    if (pending_unk && !fuse_unk_) symbols.push_back(*unk_id_);
    pending_unk = true;
  }
  if (pending_unk) symbols.push_back(*unk_id_);
  return symbols;
}

// Merges the best-ranked adjacent pair until none is left, the leftmost first among equal
// ranks, with a priority queue over a linked list of symbols: O(n log n) in the word length.
std::vector<int64_t> BpeModel::merge(std::vector<int64_t> symbols) const {
  const int n = static_cast<int>(symbols.size());
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;

  struct Candidate {
    int32_t rank;
    int position;
    int64_t merged_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const auto it = merges_.find(pair_key(symbols[left], symbols[next[left]]));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.merged_id});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (!alive[top.position] || next[top.position] < 0) continue;
    const int right = next[top.position];
    const auto it = merges_.find(pair_key(symbols[top.position], symbols[right]));
    if (it == merges_.end() || it->second.merged_id != top.merged_id) continue;
    symbols[top.position] = top.merged_id;
    alive[right] = false;
    next[top.position] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.position;
    consider(prev[top.position]);
    consider(top.position);
  }
  std::vector<int64_t> merged;
  for (int i = 0; i < n; ++i)
    if (alive[i]) merged.push_back(symbols[i]);
  return merged;
}

void BpeModel::encode_word(std::string_view word, std::vector<int64_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const std::optional<int64_t> id = token_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() < kCachedWordMaxBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (const auto it = cache_.find(std::string(word)); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::vector<int64_t> ids = merge(initial_symbols(word));
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(word, ids);
  }
}

}  // namespace specgate
