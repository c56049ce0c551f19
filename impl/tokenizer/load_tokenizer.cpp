#include <fstream>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/tokenizer/byte_tokenizer.h"
#include "impl/tokenizer/hf_tokenizer.h"
#include "impl/tokenizer/sentencepiece_tokenizer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir) {
  const std::filesystem::path ours = dir / ByteTokenizer::kFileName;
  if (std::filesystem::exists(ours)) {
    std::ifstream in(ours);
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object()) throw InputError(ours.string() + ": not a JSON object");
    if (!json.contains("type") || json["type"] != "byte")
      throw InputError(ours.string() + ": field 'type': only \"byte\" is supported");
    for (const auto& [field, id] : {std::pair{"bos_token_id", ByteTokenizer::kBos},
                                    std::pair{"eos_token_id", ByteTokenizer::kEos},
                                    std::pair{"pad_token_id", ByteTokenizer::kPad}}) {
      if (!json.contains(field) || json[field] != id)
        throw InputError(ours.string() + ": field '" + field + "': must be " + std::to_string(id));
    }
    return std::make_unique<ByteTokenizer>();
  }
  if (std::filesystem::exists(dir / "tokenizer.json")) return HfTokenizer::load(dir / "tokenizer.json");
  if (std::filesystem::exists(dir / "tokenizer.model"))
    return std::make_unique<SentencePieceTokenizer>(dir / "tokenizer.model");
  throw InputError(dir.string() + ": no tokenizer (expected tokenizer.json, tokenizer.model or " +
                   ByteTokenizer::kFileName + ")");
}

}  // namespace specgate
