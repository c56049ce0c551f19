#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"
#include "impl/tokenizer/byte_tokenizer.h"

namespace specgate {
namespace {

class TokenizerFolder : public TempFolderTest {
 protected:
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
};

TEST(ByteTokenizer, RoundTripsAnyUtf8Text) {
  const ByteTokenizer tokenizer;
  const std::string text = "caf\xC3\xA9 \xE2\x82\xAC 42\n";
  const std::vector<int64_t> ids = tokenizer.encode(text);
  EXPECT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[3], 0xC3);
  EXPECT_EQ(tokenizer.decode(ids), text);
}

TEST(ByteTokenizer, PromptsStartWithBosAndDecodeDropsSpecials) {
  const ByteTokenizer tokenizer;
  const std::vector<int64_t> prompt = tokenizer.encode_prompt("hi");
  EXPECT_EQ(prompt, (std::vector<int64_t>{ByteTokenizer::kBos, 'h', 'i'}));
  const std::vector<int64_t> with_eos = {'o', 'k', ByteTokenizer::kEos, ByteTokenizer::kPad};
  EXPECT_EQ(tokenizer.decode(with_eos), "ok");
}

TEST_F(TokenizerFolder, SavedTokenizerLoadsBack) {
  ByteTokenizer().save(dir_);
  const auto loaded = load_tokenizer(dir_);
  EXPECT_EQ(loaded->vocab_size(), ByteTokenizer::kVocabSize);
  EXPECT_EQ(loaded->special_tokens().eos, ByteTokenizer::kEos);
  EXPECT_EQ(loaded->decode(loaded->encode("x y")), "x y");
}

TEST_F(TokenizerFolder, MissingOrForeignTokenizersAreInputErrors) {
  EXPECT_THROW(load_tokenizer(dir_), InputError);
  write("tokenizer.json", "{}");
  try {
    load_tokenizer(dir_);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos);
  }
  write(ByteTokenizer::kFileName, R"({"type": "bpe"})");
  EXPECT_THROW(load_tokenizer(dir_), InputError);
  write(ByteTokenizer::kFileName, R"({"type": "byte", "bos_token_id": 1, "eos_token_id": 257, "pad_token_id": 258})");
  try {
    load_tokenizer(dir_);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bos_token_id"), std::string::npos);
  }
  write(ByteTokenizer::kFileName, "not json");
  EXPECT_THROW(load_tokenizer(dir_), InputError);
}

TEST_F(TokenizerFolder, ByteTokenizerFileErrorsNameFileLineAndField) {
  const std::string file = (dir_ / ByteTokenizer::kFileName).string();
  const auto load_error = [&] {
    try {
      load_tokenizer(dir_);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  write(ByteTokenizer::kFileName, "{\"type\": \"byte\",\n \"bos_token_id\": 1e400}");
  EXPECT_EQ(load_error(), file + ": not valid JSON at line 2, column 18: number overflow parsing '1e400'");
  write(ByteTokenizer::kFileName, "{\"type\": \"byte\",\n \"bos_token_id\": 1,\n \"eos_token_id\": 257, \"pad_token_id\": 258}");
  EXPECT_EQ(load_error(), file + ":2: field 'bos_token_id': must be 256");
  write(ByteTokenizer::kFileName, "{\"type\": \"byte\",\n \"bos_token_id\": 256}");
  EXPECT_EQ(load_error(), file + ":1: field 'eos_token_id': missing");
  write(ByteTokenizer::kFileName, "[]");
  EXPECT_EQ(load_error(), file + ":1: expected an object");
}

}  // namespace
}  // namespace specgate
