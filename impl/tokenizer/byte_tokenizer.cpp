#include "impl/tokenizer/byte_tokenizer.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate {

std::vector<int64_t> Tokenizer::encode_prompt(std::string_view text) const {
  std::vector<int64_t> ids;
  if (special_tokens().bos) ids.push_back(*special_tokens().bos);
  const std::vector<int64_t> body = encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

ByteTokenizer::ByteTokenizer() : special_{kBos, kEos, kPad} {}

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (unsigned char byte : text) ids.push_back(byte);
  return ids;
}

std::string ByteTokenizer::decode(std::span<const int64_t> ids) const {
  std::string text;
  for (int64_t id : ids) {
    if (id >= 0 && id < 256) text.push_back(static_cast<char>(id));
  }
  return text;
}

void ByteTokenizer::save(const std::filesystem::path& dir) const {
  const nlohmann::json json = {{"type", "byte"}, {"bos_token_id", kBos}, {"eos_token_id", kEos},
                               {"pad_token_id", kPad}, {"vocab_size", kVocabSize}};
  std::ofstream out(dir / kFileName);
  out << json.dump(2) << "\n";
  if (!out) throw InputError((dir / kFileName).string() + ": cannot write");
}

}  // namespace specgate
