#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "impl/tokenizer/json_node.h"

namespace specgate {

// tokenizer.json's "model" of type BPE: a vocabulary, ranked merges, and the options the
// families we load use (ignore_merges, byte_fallback, unk_token with fuse_unk).
class BpeModel {
 public:
  // Throws InputError naming the file and field for a malformed or unsupported model.
  static BpeModel from_json(const JsonNode& json);
  BpeModel(BpeModel&& other) noexcept;

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int64_t>& out) const;

  std::optional<int64_t> token_id(std::string_view token) const;
  // The token string of `id`, or nullopt when the vocabulary has no such id.
  const std::string* token(int64_t id) const;
  int64_t max_id() const { return max_id_; }

 private:
  BpeModel() = default;
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t pair_key(int64_t left, int64_t right) {
    return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  }
  // The ids of `word` before merges (one per character, with byte fallback and unknowns).
  std::vector<int64_t> initial_symbols(std::string_view word) const;
  std::vector<int64_t> merge(std::vector<int64_t> symbols) const;

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<int64_t, std::string> tokens_;  // by id, which may leave gaps (as far as 2^31)
  int64_t max_id_ = -1;
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
  bool byte_fallback_ = false;
  std::optional<int64_t> unk_id_;
  bool fuse_unk_ = false;

  static constexpr size_t kCacheCapacity = 10000, kCachedWordMaxBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

}  // namespace specgate
