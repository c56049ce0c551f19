#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specgate {

struct SpecialTokens {
  std::optional<int64_t> bos;
  std::optional<int64_t> eos;
  std::optional<int64_t> pad;
};

// Text <-> token ids for one checkpoint. encode() adds no special tokens; decode() drops them.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  virtual std::string decode(std::span<const int64_t> ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual const SpecialTokens& special_tokens() const = 0;

  // The ids a prompt starts generation from: BOS (when the tokenizer has one), then the text.
  std::vector<int64_t> encode_prompt(std::string_view text) const;
};

// The tokenizer stored in a checkpoint folder. Throws InputError naming the folder when it
// holds none this build can read.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir);

}  // namespace specgate
