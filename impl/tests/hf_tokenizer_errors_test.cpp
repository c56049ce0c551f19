// Every tokenizer.json component outside the supported list, and every malformed field, is an
// InputError naming the file and the component or field path: never silently different ids.
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {
namespace {

using nlohmann::json;

// A tiny but complete byte-level BPE tokenizer.json, which tests break one field at a time.
json valid_tokenizer() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 5, "content": "<|end|>", "special": true, "lstrip": false, "rstrip": false,
                      "normalized": false, "single_word": false}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": " ?\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
    "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
              "ignore_merges": false, "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4}, "merges": ["a b", ["Ġ", "ab"]]}
  })");
}

// The text of valid_tokenizer() with the component `key` written as `component`.
std::string with_component(const std::string& key, const std::string& component) {
  json tokenizer = valid_tokenizer();
  tokenizer[key] = "@component@";
  std::string text = tokenizer.dump();
  const std::string placeholder = "\"@component@\"";
  return text.replace(text.find(placeholder), placeholder.size(), component);
}

// `leaf` as the only member of `depth` Sequences nested in one another, as text (too deep for
// nlohmann's recursive dump).
std::string nested_sequences(const std::string& members_key, const json& leaf, int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += R"({"type": "Sequence", ")" + members_key + R"(": [)";
  text += leaf.dump();
  for (int i = 0; i < depth; ++i) text += "]}";
  return text;
}

std::string repeated(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

class TokenizerJsonErrors : public TempFolderTest {
 protected:
  // The message load_tokenizer throws for `tokenizer` written as tokenizer.json (on one line, or
  // one value a line with `indent`).
  std::string error_for(const json& tokenizer, const std::string& config = "", int indent = -1) {
    std::ofstream(dir_ / "tokenizer.json") << tokenizer.dump(indent);
    if (!config.empty()) std::ofstream(dir_ / "tokenizer_config.json") << config;
    return load_error();
  }
  // The message load_tokenizer throws for `text` written as tokenizer.json.
  std::string error_for_text(const std::string& text) {
    std::ofstream(dir_ / "tokenizer.json") << text;
    return load_error();
  }
  // The message load_tokenizer throws for the folder as it is.
  std::string load_error() {
    try {
      load_tokenizer(dir_);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  // How messages name tokenizer.json, written on one line by error_for.
  std::string file() const { return (dir_ / "tokenizer.json").string() + ":1"; }
};

TEST_F(TokenizerJsonErrors, TheValidFileLoadsAndEncodes) {
  std::ofstream(dir_ / "tokenizer.json") << valid_tokenizer().dump();
  const auto tokenizer = load_tokenizer(dir_);
  EXPECT_EQ(tokenizer->encode("ab ab<|end|>"), (std::vector<int64_t>{2, 4, 5}));
  EXPECT_EQ(tokenizer->decode(std::vector<int64_t>{2, 4, 5}), "ab ab");
  EXPECT_EQ(tokenizer->vocab_size(), 6);
  EXPECT_EQ(tokenizer->token_id("<|end|>"), 5);
}

TEST_F(TokenizerJsonErrors, IdsMayLeaveGapsUpTo2To31WithoutFillingThem) {
  json tokenizer = valid_tokenizer();
  tokenizer["model"]["vocab"]["Ġab"] = 2147483647;
  std::ofstream(dir_ / "tokenizer.json") << tokenizer.dump();
  const auto loaded = load_tokenizer(dir_);
  EXPECT_EQ(loaded->encode("ab ab<|end|>"), (std::vector<int64_t>{2, 2147483647, 5}));
  EXPECT_EQ(loaded->vocab_size(), 2147483648);
  EXPECT_EQ(loaded->decode(std::vector<int64_t>{2147483647, 4}), " ab");
}

TEST_F(TokenizerJsonErrors, UnsupportedComponentsAreNamed) {
  const std::pair<json::json_pointer, std::string> cases[] = {
      {json::json_pointer("/pre_tokenizer"), "pre_tokenizer type 'Whitespace' is not supported"},
      {json::json_pointer("/pre_tokenizer/pretokenizers/1"), "pre_tokenizer.pretokenizers[1] type 'Whitespace' is not supported"},
      {json::json_pointer("/normalizer"), "normalizer type 'Whitespace' is not supported"},
      {json::json_pointer("/decoder"), "decoder type 'Whitespace' is not supported"},
      {json::json_pointer("/post_processor"), "post_processor type 'Whitespace' is not supported"},
      {json::json_pointer("/model"), "model type 'Whitespace' is not supported"},
  };
  for (const auto& [where, message] : cases) {
    json tokenizer = valid_tokenizer();
    tokenizer[where]["type"] = "Whitespace";
    EXPECT_EQ(error_for(tokenizer), file() + ": " + message);
  }
  for (const char* normalizer : {"NFKC", "NFD", "Lowercase", "Strip", "BertNormalizer", "Precompiled"}) {
    json tokenizer = valid_tokenizer();
    tokenizer["normalizer"] = {{"type", normalizer}};
    EXPECT_EQ(error_for(tokenizer), file() + ": normalizer type '" + normalizer + "' is not supported");
  }
  for (const char* model : {"WordPiece", "Unigram", "WordLevel"}) {
    json tokenizer = valid_tokenizer();
    tokenizer["model"]["type"] = model;
    EXPECT_EQ(error_for(tokenizer), file() + ": model type '" + model + "' is not supported");
  }
}

TEST_F(TokenizerJsonErrors, MalformedFieldsAreNamedByPath) {
  const std::pair<std::string, std::string> cases[] = {
      {R"([{"op": "replace", "path": "/model/merges/1", "value": 5}])", "field 'model.merges[1]': expected a string"},
      {R"([{"op": "replace", "path": "/model/merges/0", "value": "a"}])", "field 'model.merges[0]': expected two tokens separated by one space"},
      {R"([{"op": "replace", "path": "/model/merges/0", "value": "a c"}])", "field 'model.merges[0]': a token of this merge is not in the vocabulary"},
      {R"([{"op": "replace", "path": "/model/merges/1", "value": ["a"]}])", "field 'model.merges[1]': expected two tokens"},
      {R"([{"op": "replace", "path": "/model/vocab/b", "value": "1"}])", "field 'model.vocab.b': expected an integer"},
      {R"([{"op": "remove", "path": "/model/vocab"}])", "field 'model.vocab': missing"},
      {R"([{"op": "replace", "path": "/model/unk_token", "value": "<unk>"}])", "field 'model.unk_token': not in the vocabulary"},
      {R"([{"op": "replace", "path": "/model/dropout", "value": 0.1}])", "field 'model.dropout': dropout is not supported"},
      {R"([{"op": "add", "path": "/model/continuing_subword_prefix", "value": "##"}])", "field 'model.continuing_subword_prefix': only null or \"\" is supported"},
      {R"([{"op": "remove", "path": "/added_tokens/0/id"}])", "field 'added_tokens[0].id': missing"},
      {R"([{"op": "replace", "path": "/added_tokens/0/special", "value": "yes"}])", "field 'added_tokens[0].special': expected true or false"},
      {R"([{"op": "replace", "path": "/pre_tokenizer/pretokenizers/0/behavior", "value": "Merged"}])", "field 'pre_tokenizer.pretokenizers[0].behavior': unknown behavior 'Merged'"},
      {R"([{"op": "replace", "path": "/pre_tokenizer/pretokenizers/0/pattern", "value": {"Regex": "(a"}}])", "field 'pre_tokenizer.pretokenizers[0].pattern.Regex': regex does not compile at offset 2: missing closing parenthesis"},
      {R"([{"op": "replace", "path": "/pre_tokenizer/pretokenizers/0/pattern", "value": {"Glob": "a"}}])", "field 'pre_tokenizer.pretokenizers[0].pattern': expected {\"String\": ...} or {\"Regex\": ...}"},
      {R"([{"op": "remove", "path": "/pre_tokenizer/pretokenizers"}])", "field 'pre_tokenizer.pretokenizers': missing"},
      {R"([{"op": "replace", "path": "/truncation", "value": {"max_length": 8}}])", "field 'truncation': must be null: specgate does not truncate prompts"},
      {R"([{"op": "replace", "path": "/decoder", "value": {"type": "Strip", "content": "ab", "start": 1, "stop": 0}}])", "field 'decoder.content': expected one character"},
      {R"([{"op": "replace", "path": "/post_processor", "value": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}], "special_tokens": {}}}])", "field 'post_processor.single[0].SpecialToken.id': '<s>' is not in special_tokens"},
      {R"([{"op": "replace", "path": "/post_processor", "value": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}}}}])", "field 'post_processor.special_tokens.<s>.ids[0]': id 99 is not in the vocabulary"},
  };
  for (const auto& [patch, message] : cases) {
    EXPECT_EQ(error_for(valid_tokenizer().patch(json::parse(patch))), file() + ": " + message) << patch;
  }
}

TEST_F(TokenizerJsonErrors, MessagesNameTheLineOfTheFieldOrOfTheObjectThatLacksIt) {
  const std::string path = (dir_ / "tokenizer.json").string();
  json tokenizer = valid_tokenizer();
  tokenizer["model"]["merges"][1] = 5;
  EXPECT_EQ(error_for(tokenizer, "", 2), path + ":26: field 'model.merges[1]': expected a string");
  tokenizer = valid_tokenizer();
  tokenizer["model"].erase("vocab");
  EXPECT_EQ(error_for(tokenizer, "", 2), path + ":19: field 'model.vocab': missing");
  tokenizer = valid_tokenizer();
  tokenizer["model"]["vocab"]["ab"] = 4294967296;
  EXPECT_EQ(error_for(tokenizer, "", 2), path + ":35: field 'model.vocab.ab': out of range");
  std::ofstream(dir_ / "tokenizer.json") << "{\n\"model\": {\"vocab\": {\"a\": 1e400}}}";
  EXPECT_EQ(load_error(), path + ": not valid JSON at line 2, column 26: number overflow parsing '1e400'");
}

TEST_F(TokenizerJsonErrors, FilesThatAreNotJsonAndUnknownConfigTokensAreNamed) {
  std::ofstream(dir_ / "tokenizer.json") << "{\"model\": ";
  EXPECT_EQ(load_error(), (dir_ / "tokenizer.json").string() +
                              ": not valid JSON at line 1, column 11: syntax error while parsing value - unexpected end of input; "
                              "expected '[', '{', or a literal");
  EXPECT_EQ(error_for(valid_tokenizer(), R"({"bos_token": "<s>"})"),
            (dir_ / "tokenizer_config.json").string() + ": field 'bos_token': '<s>' is not a token of tokenizer.json");
  EXPECT_EQ(error_for(valid_tokenizer(), R"({"eos_token": {"content": 7}})"),
            (dir_ / "tokenizer_config.json").string() + ":1: field 'eos_token.content': expected a string");
}

TEST_F(TokenizerJsonErrors, SequencesNestedDeeperThanTheTokenizersLibraryReadsAreNamed) {
  // In 62 Sequences the Replace's pattern object is the 127th array or object from the root: the
  // deepest the tokenizers library reads. It encodes as the Replace alone does.
  const json replace = {{"type", "Replace"}, {"pattern", {{"String", "b"}}}, {"content", "a"}};
  std::ofstream(dir_ / "tokenizer.json") << with_component("normalizer", nested_sequences("normalizers", replace, 62));
  EXPECT_EQ(load_tokenizer(dir_)->encode("ab ab"), (std::vector<int64_t>{0, 0, 3, 0, 0}));

  const json split = valid_tokenizer()["pre_tokenizer"]["pretokenizers"][0];
  for (const auto& [key, members_key, leaf] : {std::tuple{"normalizer", "normalizers", replace},
                                               std::tuple{"pre_tokenizer", "pretokenizers", split}}) {
    // What the 63rd Sequence holds is the 128th array or object: the message names it, however
    // deep the file goes (past 512 levels without the line).
    const std::string too_deep = std::string("field '") + key + repeated(std::string(".") + members_key + "[0]", 63) +
                                 "': nested deeper than 127 arrays and objects, the most Hugging Face's tokenizers reads";
    EXPECT_EQ(error_for_text(with_component(key, nested_sequences(members_key, leaf, 63))), file() + ": " + too_deep);
    const std::string message = error_for_text(with_component(key, nested_sequences(members_key, leaf, 2'000)));
    EXPECT_TRUE(message.starts_with((dir_ / "tokenizer.json").string()) && message.ends_with(too_deep)) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST_F(TokenizerJsonErrors, ArraysNestedDeepWhereNoComponentIsReadOnlyNeedParsing) {
  const std::string arrays = std::string(100'000, '[') + std::string(100'000, ']');
  std::ofstream(dir_ / "tokenizer.json") << with_component("unread", arrays);
  EXPECT_EQ(load_tokenizer(dir_)->encode("ab ab"), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(error_for_text(with_component("normalizer", arrays)),
            (dir_ / "tokenizer.json").string() + ": field 'normalizer': expected an object");
}

TEST_F(TokenizerJsonErrors, APostProcessorHoldsOneTemplateProcessing) {
  const json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const json end = {{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}};
  const json special_tokens = {
      {"<|end|>", {{"id", "<|end|>"}, {"ids", json::array({5})}, {"tokens", json::array({"<|end|>"})}}}};
  const json byte_level = valid_tokenizer()["post_processor"];
  // The template repeats the text: down a Sequence of 40 of them it would be there 2^40 times.
  const json doubling = {{"type", "TemplateProcessing"}, {"single", {a, a}}, {"special_tokens", json::object()}};
  json tokenizer = valid_tokenizer();
  tokenizer["post_processor"] = {{"type", "Sequence"}, {"processors", std::vector<json>(40, doubling)}};
  EXPECT_EQ(error_for(tokenizer),
            file() + ": field 'post_processor.processors[1]': only one TemplateProcessing is supported in a post_processor");

  // One TemplateProcessing among ByteLevels, nested or not, as in Llama 3.1's Sequence [ByteLevel,
  // TemplateProcessing]: <|end|> and the text twice, as the tokenizers library gives them.
  const json end_then_twice = {{"type", "TemplateProcessing"}, {"single", {end, a, a}}, {"special_tokens", special_tokens}};
  std::vector<json> processors(40, byte_level);
  processors[1] = {{"type", "Sequence"}, {"processors", json::array({end_then_twice})}};
  tokenizer["post_processor"] = {{"type", "Sequence"}, {"processors", processors}};
  std::ofstream(dir_ / "tokenizer.json") << tokenizer.dump();
  EXPECT_EQ(load_tokenizer(dir_)->encode_prompt("ab ab"), (std::vector<int64_t>{5, 2, 4, 2, 4}));
}

TEST_F(TokenizerJsonErrors, ARegexBeyondItsMatchLimitIsAnInputErrorNamingItsField) {
  json tokenizer = valid_tokenizer();
  tokenizer["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a+)+$";  // backtracks exponentially
  std::ofstream(dir_ / "tokenizer.json") << tokenizer.dump();
  const auto loaded = load_tokenizer(dir_);
  try {
    loaded->encode(std::string(40, 'a') + "b");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir_ / "tokenizer.json").string() +
                                         ": field 'pre_tokenizer.pretokenizers[0].pattern.Regex': regex exceeded its "
                                         "match limit on a text of 41 bytes (match limit exceeded)");
  }
}

TEST_F(TokenizerJsonErrors, TextThatIsNotUtf8IsAnInputError) {
  std::ofstream(dir_ / "tokenizer.json") << valid_tokenizer().dump();
  const auto tokenizer = load_tokenizer(dir_);
  EXPECT_THROW(tokenizer->encode("ab\xC3"), InputError);
}

}  // namespace
}  // namespace specgate
