// What serve streams: each round's tokens as a chunk of vLLM's shape, text held back until its
// characters are whole, chat's role chunk, choices that end apart, and the seeded stream faults.
#include "conformance/serve/completion_stream.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/tokenizer/byte_tokenizer.h"

namespace specgate::cli {
namespace {

using nlohmann::json;

const ByteTokenizer kBytes;

// Each event's data as JSON, [DONE] as the string "[DONE]".
std::vector<json> data_of(const std::vector<std::string>& events) {
  std::vector<json> out;
  for (const std::string& event : events) {
    EXPECT_TRUE(event.starts_with("data: ") && event.ends_with("\n\n")) << event;
    const std::string data = event.substr(6, event.size() - 8);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
  }
  return out;
}

Generated finished(std::vector<int64_t> tokens, int64_t drafted = 0, int64_t accepted = 0) {
  Generated generated{.sequence = {.tokens = std::move(tokens), .drafted = drafted, .accepted = accepted}};
  generated.completion_tokens = static_cast<int64_t>(generated.sequence.tokens.size());
  return generated;
}

const ServeRequest kCompletion{.prompt = {256, 104, 105}, .max_new_tokens = 4, .return_token_ids = true, .stream = true,
                               .include_usage = true};

// "a", then the two bytes of "é" one round apart, then "b": the round that ends inside "é" sends
// its ids and the text before it; the next sends the character whole.
TEST(CompletionStream, HoldsTextBackUntilItsCharacterIsWhole) {
  CompletionStream stream(kCompletion, kBytes, "m", 7, {});
  std::vector<json> first = data_of(stream.advance(0, std::vector<int64_t>{97, 0xC3}));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["id"], "cmpl-7");
  EXPECT_EQ(first[0]["object"], "text_completion");
  EXPECT_EQ(first[0]["choices"][0]["text"], "a");
  EXPECT_EQ(first[0]["choices"][0]["token_ids"], json({97, 0xC3}));
  EXPECT_EQ(first[0]["choices"][0]["prompt_token_ids"], json({256, 104, 105}));
  EXPECT_TRUE(first[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(stream.advance(0, std::vector<int64_t>{97, 0xC3}).empty()) << "a step that added nothing sends nothing";
  std::vector<json> second = data_of(stream.advance(0, std::vector<int64_t>{97, 0xC3, 0xA9}));
  EXPECT_EQ(second[0]["choices"][0]["text"], "\xC3\xA9");
  EXPECT_EQ(second[0]["choices"][0]["token_ids"], json({0xA9}));
  EXPECT_TRUE(second[0]["choices"][0]["prompt_token_ids"].is_null());
  std::vector<json> last = data_of(stream.finish(0, finished({97, 0xC3, 0xA9, 98})));
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[0]["choices"][0]["text"], "b");
  EXPECT_EQ(last[0]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(last[1]["choices"], json::array());
  EXPECT_EQ(last[1]["usage"], json({{"prompt_tokens", 3}, {"total_tokens", 7}, {"completion_tokens", 4}}));
  EXPECT_EQ(last[2], "[DONE]");
}

// A choice that ends inside a character ends with U+FFFD, as its whole answer does.
TEST(CompletionStream, AnAnswerThatEndsInsideACharacterEndsAsItsWholeTextDoes) {
  CompletionStream stream(kCompletion, kBytes, "m", 1, {});
  EXPECT_EQ(data_of(stream.advance(0, std::vector<int64_t>{97, 0xE2}))[0]["choices"][0]["text"], "a");
  std::vector<json> last = data_of(stream.finish(0, finished({97, 0xE2, 0x82})));
  EXPECT_EQ(last[0]["choices"][0]["text"], "\xEF\xBF\xBD");
  EXPECT_EQ(answer_text(kBytes, std::vector<int64_t>{97, 0xE2, 0x82}), "a\xEF\xBF\xBD");
}

// Chat: each choice opens with its role (prompt_token_ids beside the choices), the choices
// interleave, and usage and [DONE] come once the last of them finished.
TEST(CompletionStream, ChatOpensEachChoiceWithItsRoleAndEndsAfterTheLastChoice) {
  const ServeRequest chat{.api = ServeApi::kChat, .prompt = {256, 104}, .max_new_tokens = 3, .return_token_ids = true,
                          .n = 2, .stream = true, .include_usage = true};
  CompletionStream stream(chat, kBytes, "m", 3, {});
  std::vector<json> opened = data_of(stream.advance(1, std::vector<int64_t>{120}));
  ASSERT_EQ(opened.size(), 2u);
  EXPECT_EQ(opened[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(opened[0]["choices"][0]["index"], 1);
  EXPECT_EQ(opened[0]["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_EQ(opened[0]["prompt_token_ids"], json({256, 104}));
  EXPECT_EQ(opened[1]["choices"][0]["delta"], json({{"content", "x"}}));
  EXPECT_FALSE(opened[1].contains("prompt_token_ids"));
  std::vector<json> one_done = data_of(stream.finish(1, finished({120, 121})));
  ASSERT_EQ(one_done.size(), 1u) << "choice 0 is still under way";
  EXPECT_EQ(one_done[0]["choices"][0]["finish_reason"], "length");
  std::vector<json> all_done = data_of(stream.finish(0, finished({65, 66, 67})));
  ASSERT_EQ(all_done.size(), 4u);  // role, content with the finish reason, usage, [DONE]
  EXPECT_EQ(all_done[1]["choices"][0]["delta"], json({{"content", "ABC"}}));
  EXPECT_EQ(all_done[2]["usage"]["completion_tokens"], 5);
  EXPECT_EQ(all_done[3], "[DONE]");
}

// The texts and ids a stream put together, and its usage count, for one answer under `faults`:
// a round of three tokens ("aé", ids 97 195 169), then the last token "b".
struct Streamed {
  std::string text;
  std::vector<int64_t> ids;
  int64_t chunks_after_finish = 0;
  int64_t usage = 0;
};

Streamed stream_under(ResponseFault fault) {
  ResponseFaults faults;
  faults.add(fault);
  CompletionStream stream(kCompletion, kBytes, "m", 1, faults);
  std::vector<std::string> events = stream.advance(0, std::vector<int64_t>{97, 0xC3, 0xA9});
  for (std::string& event : stream.finish(0, finished({97, 0xC3, 0xA9, 98}, 6, 3))) events.push_back(std::move(event));
  Streamed out;
  bool finished_seen = false;
  for (const json& data : data_of(events)) {
    if (data == "[DONE]") continue;
    if (data.contains("usage")) out.usage = data["usage"]["completion_tokens"];
    if (data["choices"].empty()) continue;
    const json& choice = data["choices"][0];
    out.chunks_after_finish += finished_seen ? 1 : 0;
    finished_seen = finished_seen || !choice["finish_reason"].is_null();
    out.text += choice["text"].get<std::string>();
    for (const json& id : choice["token_ids"]) out.ids.push_back(id);
  }
  return out;
}

TEST(CompletionStream, EachSeededStreamFaultBreaksWhatItNames) {
  const std::vector<int64_t> ids = {97, 0xC3, 0xA9, 98};
  const Streamed right = stream_under(ResponseFault::kZeroedLogprobs);  // a fault of whole answers' reports only
  EXPECT_EQ(right.text, "a\xC3\xA9" "b");
  EXPECT_EQ(right.ids, ids);
  EXPECT_EQ(right.usage, 4);
  EXPECT_EQ(right.chunks_after_finish, 0);

  const Streamed last_only = stream_under(ResponseFault::kStreamLastTokenOnly);
  EXPECT_EQ(last_only.ids, (std::vector<int64_t>{0xA9, 98}));
  EXPECT_NE(last_only.text, right.text);
  EXPECT_EQ(stream_under(ResponseFault::kStreamCutUtf8).text, "ab");
  EXPECT_EQ(stream_under(ResponseFault::kStreamUsageCountsDrafted).usage, 7);
  EXPECT_EQ(stream_under(ResponseFault::kStreamChunkAfterFinish).chunks_after_finish, 1);
}

}  // namespace
}  // namespace specgate::cli
