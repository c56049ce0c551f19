// The SentencePiece path against SentencePiece's own command-line tools: a tiny model trained
// here with spm_train, then specgate's ids compared with spm_encode's on the same texts.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {
namespace {

const char* const kCorpus[] = {
    "The quick brown fox jumps over the lazy dog.",
    "A tokenizer splits text into pieces that a model reads, one piece at a time.",
    "Speculative decoding drafts several tokens and verifies them in one pass of the target.",
    "Hello world, hello tokens, hello pieces, hello models and their vocabularies.",
    "Numbers like 12345 and 2024 and symbols like #, $, % and & appear in text too.",
    "Caf\xC3\xA9 au lait, na\xC3\xAFve fa\xC3\xA7" "ade, \xE4\xB8\xAD\xE6\x96\x87 and \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D.",
};

// One line each: spm_encode reads one sentence per line.
const char* const kTexts[] = {
    "Hello world",
    "  two leading spaces and  double  spaces",
    "tokens 42 and 1234567890",
    "unseen characters: \xF0\x9F\x98\x80 \xE2\x82\xAC \xE3\x81\x82",  // byte fallback
    "The lazy fox reads the pieces.",
    "e\xCC\x81 and \xC3\xA9",
};

std::string run(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return output;
}

class SentencePieceModel : public TempFolderTest {
 protected:
  void SetUp() override {
    TempFolderTest::SetUp();
    std::ofstream corpus(dir_ / "corpus.txt");
    for (int repeat = 0; repeat < 20; ++repeat)
      for (const char* line : kCorpus) corpus << line << "\n";
    corpus.close();
    run("spm_train --input=" + (dir_ / "corpus.txt").string() + " --model_prefix=" + (dir_ / "tokenizer").string() +
        " --vocab_size=400 --model_type=bpe --byte_fallback=true --character_coverage=1.0"
        " --normalization_rule_name=identity --remove_extra_whitespaces=false --minloglevel=2 >/dev/null 2>&1");
    ASSERT_TRUE(std::filesystem::exists(dir_ / "tokenizer.model")) << "spm_train failed";
  }

  std::vector<int64_t> spm_encode(const std::string& text) {
    std::ofstream(dir_ / "text.txt") << text;
    std::istringstream ids(run("spm_encode --model=" + (dir_ / "tokenizer.model").string() + " --output_format=id < " +
                               (dir_ / "text.txt").string()));
    std::vector<int64_t> out;
    for (int64_t id; ids >> id;) out.push_back(id);
    return out;
  }
};

TEST_F(SentencePieceModel, EncodesAsSpmEncodeAndDecodesBack) {
  const auto tokenizer = load_tokenizer(dir_);
  EXPECT_EQ(tokenizer->vocab_size(), 400);
  for (const char* text : kTexts) {
    const std::vector<int64_t> ids = tokenizer->encode(text);
    EXPECT_EQ(ids, spm_encode(text)) << text;
    EXPECT_EQ(tokenizer->decode(ids), text);
  }
  const std::vector<int64_t> lines = tokenizer->encode("one\ntwo");
  EXPECT_NE(std::find(lines.begin(), lines.end(), *tokenizer->token_id("<0x0A>")), lines.end());
  EXPECT_EQ(tokenizer->decode(lines), "one\ntwo");
}

TEST_F(SentencePieceModel, PromptsStartWithBosAndDecodeDropsControlTokens) {
  const auto tokenizer = load_tokenizer(dir_);
  ASSERT_EQ(tokenizer->special_tokens().bos, 1);
  ASSERT_EQ(tokenizer->special_tokens().eos, 2);
  std::vector<int64_t> prompt = tokenizer->encode_prompt("Hello world");
  EXPECT_EQ(prompt.front(), 1);
  prompt.push_back(2);
  EXPECT_EQ(tokenizer->decode(prompt), "Hello world");
  EXPECT_EQ(tokenizer->token_id("<s>"), 1);
  EXPECT_EQ(tokenizer->token_id("no such piece"), std::nullopt);
}

TEST_F(SentencePieceModel, ACorruptModelIsAnInputErrorNamingTheFile) {
  std::ofstream(dir_ / "tokenizer.model") << "not a model";
  try {
    load_tokenizer(dir_);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "tokenizer.model").string() + ": not a SentencePiece model"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace specgate
