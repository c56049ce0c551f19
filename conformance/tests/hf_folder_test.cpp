// End to end on a Hugging Face folder with nothing specgate-specific in it: a tiny Llama
// (config.json, model.safetensors, generation_config.json) with a byte-level BPE tokenizer.json
// and tokenizer_config.json written here. Oracle, EQSPEC and EXSPEC run through the CLI with the
// raw and vicuna templates, every turn, in float64: every engine's token ids equal the oracle's.
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fixtures/models/tiny_configs.h"
#include "impl/checkpoint/model_io.h"
#include "impl/model/weights.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

using nlohmann::json;

// GPT-2's byte-to-character table of byte-level BPE.
std::vector<std::string> byte_level_alphabet() {
  std::vector<int> printable;
  for (int b = '!'; b <= '~'; ++b) printable.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) printable.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) printable.push_back(b);
  std::vector<int> code_point(256, -1);
  for (int b : printable) code_point[b] = b;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    if (code_point[b] < 0) code_point[b] = next++;
  }
  std::vector<std::string> alphabet;
  for (int c : code_point) {
    std::string utf8;
    if (c < 0x80) {
      utf8 += static_cast<char>(c);
    } else {
      utf8 += static_cast<char>(0xC0 | (c >> 6));
      utf8 += static_cast<char>(0x80 | (c & 0x3F));
    }
    alphabet.push_back(utf8);
  }
  return alphabet;
}

constexpr const char* kBos = "<|begin_of_text|>";
constexpr const char* kEos = "<|end_of_text|>";
constexpr const char* kVicunaSeparator = "</s>";

// tokenizer.json as Llama 3's is laid out: ByteLevel pre-tokenizer and decoder, a BOS template.
// Returns the vocabulary size; the added tokens come last, in the order above.
int64_t write_tokenizer(const std::filesystem::path& dir) {
  json vocab = json::object();
  const std::vector<std::string> alphabet = byte_level_alphabet();
  for (size_t b = 0; b < alphabet.size(); ++b) vocab[alphabet[b]] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"\xC4\xA0", "t"}, {"h", "e"}, {"\xC4\xA0t", "he"}, {"i", "n"}, {"e", "r"}, {"\xC4\xA0", "a"}, {"o", "n"}, {"r", "e"}};
  json merge_list = json::array();
  for (const auto& [left, right] : merges) {
    vocab[left + right] = vocab.size();
    merge_list.push_back(left + " " + right);
  }
  json added = json::array();
  const int64_t first_added = static_cast<int64_t>(vocab.size());
  for (const char* token : {kBos, kEos, kVicunaSeparator}) {
    added.push_back({{"id", first_added + static_cast<int64_t>(added.size())}, {"content", token}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", kBos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", json::array()},
        {"special_tokens", {{kBos, {{"id", kBos}, {"ids", {first_added}}, {"tokens", {kBos}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", merge_list}}}};
  std::ofstream(dir / "tokenizer.json") << tokenizer.dump(1);
  std::ofstream(dir / "tokenizer_config.json")
      << json{{"bos_token", kBos}, {"eos_token", kEos}, {"clean_up_tokenization_spaces", false}}.dump(1);
  return first_added + 3;
}

void write_llama(const std::filesystem::path& dir, int64_t vocab_size, int64_t layers, uint64_t seed) {
  std::filesystem::create_directories(dir);
  const int64_t bos = write_tokenizer(dir) - 3;
  ModelConfig config = tiny_config("llama");
  config.vocab_size = vocab_size;
  config.num_layers = layers;
  config.max_position_embeddings = 2048;
  config.bos_token_id = bos;
  config.eos_token_ids = {bos + 1};
  config.pad_token_id.reset();
  save_transformer(dir, Transformer(config, random_weights(config, at::TensorOptions().dtype(at::kDouble), seed)));
  std::ofstream(dir / "generation_config.json") << json{{"bos_token_id", bos}, {"eos_token_id", {bos + 1, bos + 2}}}.dump();
}

class HfFolder : public TempFolderTest {
 protected:
  // Runs the CLI; the answers it wrote, one JSON object per line.
  std::vector<json> generate(const std::string& engine, const std::string& chat_template, const std::string& options) {
    const std::filesystem::path out = dir_ / (engine + "_" + chat_template + ".jsonl");
    const std::string command = std::string(SPECGATE_CONFORMANCE) + " generate --engine " + engine + " --target " +
                                (dir_ / "target").string() + " --bench " + SPECGATE_SAMPLE_BENCH +
                                " --question-ids 1,2,9,10,11 --turns all --max-new-tokens 12 --dtype float64" +
                                " --chat-template " + chat_template + " " + options + " --out " + out.string() + " >/dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::vector<json> answers;
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);) answers.push_back(json::parse(line));
    return answers;
  }
};

std::vector<json> token_ids(const std::vector<json>& answers) {
  std::vector<json> ids;
  for (const json& answer : answers) ids.push_back(answer["choices"][0]["token_ids"]);
  return ids;
}

TEST_F(HfFolder, EveryEngineGivesTheOraclesTokensOnRawAndVicunaPrompts) {
  const int64_t vocab_size = write_tokenizer(dir_);
  write_llama(dir_ / "target", vocab_size, 2, 1);
  write_llama(dir_ / "draft", vocab_size, 1, 2);
  const int64_t bos = vocab_size - 3, separator = vocab_size - 1;
  const std::string draft = " --draft " + (dir_ / "draft").string();
  for (const std::string chat_template : {"raw", "vicuna"}) {
    const std::vector<json> oracle = generate("oracle", chat_template, "");
    ASSERT_EQ(oracle.size(), 5u);
    EXPECT_EQ(token_ids(generate("eqspec", chat_template, draft + " --batch-size 3 --draft-tokens 3")), token_ids(oracle))
        << chat_template;
    EXPECT_EQ(token_ids(generate("exspec", chat_template, draft + " --batch-size 2 --window 4")), token_ids(oracle))
        << chat_template;
    for (const json& answer : oracle) {
      EXPECT_EQ(answer["chat_template"], chat_template);
      const json& prompts = answer["choices"][0]["prompt_token_ids"];
      EXPECT_EQ(prompts[0][0], bos) << "prompts start with the post-processor's BOS";
      if (prompts.size() < 2) continue;
      // The vicuna separator after the first answer is its added token, not its characters.
      const bool has_separator = std::find(prompts[1].begin(), prompts[1].end(), separator) != prompts[1].end();
      EXPECT_EQ(has_separator, chat_template == "vicuna") << prompts[1].dump();
    }
  }
}

}  // namespace
}  // namespace specgate
