// tokenizer.json components on cases whose expected output the Rust `tokenizers` library
// documents or tests (Split behaviors, added-token options, BPE unknowns and byte fallback).
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/tokenizer/added_tokens.h"
#include "impl/tokenizer/bpe_model.h"
#include "impl/tokenizer/decoder.h"
#include "impl/tokenizer/pre_tokenizer.h"
#include "impl/tokenizer/tokenizer_config.h"

namespace specgate {
namespace {

using nlohmann::json;

std::vector<std::string> pre_tokenize(const json& config, const std::string& text) {
  const PreTokenizer pre_tokenizer = PreTokenizer::from_json(JsonNode(config, "tokenizer.json", "pre_tokenizer"));
  std::vector<TextPiece> pieces = {{text, true, std::nullopt}};
  pre_tokenizer.apply(pieces);
  std::vector<std::string> texts;
  for (const TextPiece& piece : pieces) texts.push_back(piece.text);
  return texts;
}

using Texts = std::vector<std::string>;

TEST(SplitPreTokenizer, EachBehaviorCutsAsTheRustLibraryDocuments) {
  const auto split = [](const char* behavior, bool invert = false) {
    return pre_tokenize({{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}},
                        "the-final--countdown");
  };
  EXPECT_EQ(split("Removed"), (Texts{"the", "final", "countdown"}));
  EXPECT_EQ(split("Isolated"), (Texts{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithPrevious"), (Texts{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithNext"), (Texts{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split("Contiguous"), (Texts{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split("Removed", true), (Texts{"-", "-", "-"}));
}

TEST(SplitPreTokenizer, LongRunsOfWhitespaceSplitAsTheTokenizersLibrarySplitsThem) {
  // Llama 3's pattern, whose \s*[\r\n]+ backtracks once per space of the run.
  const json llama3 = {{"type", "Split"},
                       {"pattern", {{"Regex", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                       {"behavior", "Isolated"}};
  const std::string spaces(12'000'000, ' ');
  EXPECT_EQ(pre_tokenize(llama3, "x" + spaces + "y"), (Texts{"x", spaces.substr(1), " y"}));
}

TEST(SplitPreTokenizer, AGroupRepeatedOncePerCharacterMatchesALongText) {
  const json alternation = {{"type", "Split"}, {"pattern", {{"Regex", "(?:a|b)+"}}}, {"behavior", "Isolated"}};
  const std::string text = std::string(1'000'000, 'a') + "b";
  EXPECT_EQ(pre_tokenize(alternation, "-" + text), (Texts{"-", text}));
}

TEST(ByteLevelPreTokenizer, SplitsLikeGpt2AndMapsBytes) {
  EXPECT_EQ(pre_tokenize({{"type", "ByteLevel"}, {"add_prefix_space", true}}, "Hello my friend,\nhow?"),
            (Texts{"ĠHello", "Ġmy", "Ġfriend", ",", "Ċ", "how", "?"}));
  EXPECT_EQ(pre_tokenize({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}, "é x"),
            (Texts{"Ã©Ġx"}));
}

TEST(MetaspacePreTokenizer, ReplacesSpacesAndPrependsAsItsSchemeSays) {
  const json metaspace = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(pre_tokenize(metaspace, "Hey   friend!"), (Texts{"▁Hey", "▁", "▁", "▁friend!"}));
  json first = metaspace;
  first["prepend_scheme"] = "first";
  first["split"] = false;
  const PreTokenizer pre_tokenizer = PreTokenizer::from_json(JsonNode(first, "tokenizer.json", "pre_tokenizer"));
  std::vector<TextPiece> pieces = {{"a b", true, std::nullopt}, {"<s>", false, 1}, {"c", false, std::nullopt}};
  pre_tokenizer.apply(pieces);
  EXPECT_EQ(pieces[0].text, "▁a▁b");
  EXPECT_EQ(pieces[1].text, "<s>");
  EXPECT_EQ(pieces[2].text, "c");  // not at the start of the text: nothing prepended
}

struct Cut {
  std::string text;
  std::optional<int64_t> id;
  bool operator==(const Cut&) const = default;
};

std::vector<Cut> cuts(const json& added_tokens, const std::string& text) {
  const AddedTokens added = AddedTokens::from_json(JsonNode(added_tokens, "tokenizer.json", "added_tokens"), nullptr);
  std::vector<Cut> out;
  for (const TextPiece& piece : added.split(text, nullptr)) out.push_back({piece.text, piece.added_token});
  return out;
}

TEST(AddedTokens, SingleWordMatchesOnlyWholeWords) {
  const json mask = json::array({{{"id", 0}, {"content", "<mask>"}, {"single_word", true}, {"normalized", false}}});
  EXPECT_EQ(cuts(mask, "<mask> My name <mask> A<mask> <mask>ony <mask>"),
            (std::vector<Cut>{{"<mask>", 0}, {" My name ", std::nullopt}, {"<mask>", 0},
                              {" A<mask> <mask>ony ", std::nullopt}, {"<mask>", 0}}));
}

TEST(AddedTokens, LstripAndRstripTakeUnicodeWhiteSpace) {
  const json mask = json::array({{{"id", 0}, {"content", "<mask>"}, {"single_word", true}, {"lstrip", true},
                                  {"rstrip", true}, {"normalized", false}}});
  EXPECT_EQ(cuts(mask, "Hi <mask> there\t<mask>\t<mask>\u2000"),
            (std::vector<Cut>{{"Hi", std::nullopt}, {" <mask> ", 0}, {"there", std::nullopt},
                              {"\t<mask>\t", 0}, {"<mask>\u2000", 0}}));
}

TEST(AddedTokens, TheLongestTokenAtTheLeftmostPlaceWins) {
  const json tokens = json::array({{{"id", 0}, {"content", "<|a|>"}}, {{"id", 1}, {"content", "<|a|><|b|>"}},
                                   {{"id", 2}, {"content", "|b"}}});
  EXPECT_EQ(cuts(tokens, "x<|a|><|b|><|a|>|b"),
            (std::vector<Cut>{{"x", std::nullopt}, {"<|a|><|b|>", 1}, {"<|a|>", 0}, {"|b", 2}}));
}

std::vector<int64_t> bpe(json model, const std::string& word) {
  model["type"] = "BPE";
  const BpeModel bpe = BpeModel::from_json(JsonNode(model, "tokenizer.json", "model"));
  std::vector<int64_t> ids;
  bpe.encode_word(word, ids);
  return ids;
}

TEST(BpeModel, MergesTheBestRankFirstAndTheLeftmostAmongEqualRanks) {
  const json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"aa", 6}};
  EXPECT_EQ(bpe({{"vocab", vocab}, {"merges", {"a a"}}}, "aaa"), (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(bpe({{"vocab", vocab}, {"merges", {"b c", "a b"}}}, "abc"), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(bpe({{"vocab", vocab}, {"merges", {"a b", "b c"}}}, "abcabc"), (std::vector<int64_t>{3, 2, 3, 2}));
  EXPECT_EQ(bpe({{"vocab", vocab}, {"merges", {"a b", "b c"}}, {"ignore_merges", true}}, "abc"), (std::vector<int64_t>{5}));
}

TEST(BpeModel, UnknownCharactersFuseOrFallBackToBytes) {
  const json vocab = {{"<unk>", 0}, {"a", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}};
  const json base = {{"vocab", vocab}, {"merges", json::array()}, {"unk_token", "<unk>"}};
  json fused = base, separate = base, bytes = base;
  fused["fuse_unk"] = true;
  bytes["byte_fallback"] = true;
  EXPECT_EQ(bpe(fused, "a€€a€"), (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(bpe(separate, "a€€a"), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(bpe(bytes, "é€"), (std::vector<int64_t>{2, 3, 0}));
}

std::string decode(const json& decoder, std::vector<std::string> tokens) {
  return TokenizerDecoder::from_json(JsonNode(decoder, "tokenizer.json", "decoder")).decode(std::move(tokens));
}

TEST(Decoders, ByteFallbackFuseStripReplaceAndMetaspace) {
  const json llama = json::parse(R"({"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})");
  EXPECT_EQ(decode(llama, {"▁Hey", "▁", "<0xC3>", "<0xA9>", "<0xC3>", "!"}), "Hey \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD!");  // C3 A9 C3 is not UTF-8 as a whole
  EXPECT_EQ(decode({{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}}, {"▁Hey", "▁friend!"}),
            "Hey friend!");
  EXPECT_EQ(decode({{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "never"}}, {"▁Hey"}), " Hey");
  EXPECT_EQ(decode({{"type", "ByteLevel"}}, {"ĠHello", "Ċ", "Ã", "<|x|>"}), " Hello\n\xEF\xBF\xBD<|x|>");
}

TEST(CleanUpTokenization, DropsSpacesBeforePunctuationAndContractions) {
  EXPECT_EQ(clean_up_tokenization("Hi , I 'm here . Do n't ! ok ?"), "Hi, I'm here. Don't! ok?");
}

}  // namespace
}  // namespace specgate
