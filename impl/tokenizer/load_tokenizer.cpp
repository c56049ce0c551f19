#include "impl/common/error.h"
#include "impl/common/json_value.h"
#include "impl/tokenizer/byte_tokenizer.h"
#include "impl/tokenizer/hf_tokenizer.h"
#include "impl/tokenizer/json_node.h"
#include "impl/tokenizer/sentencepiece_tokenizer.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir) {
  const std::filesystem::path ours = dir / ByteTokenizer::kFileName;
  if (std::filesystem::exists(ours)) {
    const JsonFile file = read_json_file(ours);
    const JsonNode root(file);
    if (!file.value.is_object()) root.fail("expected an object");
    if (root["type"].value() != "byte") root["type"].fail("only \"byte\" is supported");
    for (const auto& [field, id] : {std::pair{"bos_token_id", ByteTokenizer::kBos},
                                    std::pair{"eos_token_id", ByteTokenizer::kEos},
                                    std::pair{"pad_token_id", ByteTokenizer::kPad}}) {
      if (root[field].value() != id) root[field].fail("must be " + std::to_string(id));
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
