#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impl/bench/conversation.h"
#include "impl/common/error.h"
#include "impl/tokenizer/byte_tokenizer.h"

namespace specgate {
namespace {

std::vector<int64_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

std::vector<int64_t> bos_then(const std::string& text) {
  std::vector<int64_t> ids = {ByteTokenizer::kBos};
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

const Question kQuestion{.question_id = 7, .category = "writing", .turns = {"Q1", "Q2"}};

TEST(Conversation, RawPromptsAreTheQuestionAfterBosAndLaterTurnsFollowTheStrippedAnswer) {
  const ByteTokenizer tokenizer;
  const PromptFormat raw{&tokenizer, ChatTemplate::kRaw};
  EXPECT_EQ(turn_prompt(raw, kQuestion, 0, {}), bos_then("Q1"));
  std::vector<int64_t> answer = bytes(" A1 \n");
  answer.push_back(ByteTokenizer::kEos);
  const std::vector<std::vector<int64_t>> answers = {answer};
  EXPECT_EQ(turn_prompt_text(raw, kQuestion, 1, answers), "Q1A1\nQ2");
  EXPECT_EQ(turn_prompt(raw, kQuestion, 1, answers), bos_then("Q1A1\nQ2"));
}

TEST(Conversation, TemplatesRenderTheConversationAndOnlyLlamaOnesBringTheirOwnBos) {
  const ByteTokenizer tokenizer;
  const std::vector<std::vector<int64_t>> answers = {bytes("A1")};
  const PromptFormat vicuna{&tokenizer, ChatTemplate::kVicuna};
  const std::string vicuna_text = turn_prompt_text(vicuna, kQuestion, 1, answers);
  EXPECT_TRUE(vicuna_text.ends_with("questions. USER: Q1 ASSISTANT: A1</s>USER: Q2 ASSISTANT:")) << vicuna_text;
  EXPECT_EQ(turn_prompt(vicuna, kQuestion, 1, answers), bos_then(vicuna_text));
  const PromptFormat llama3{&tokenizer, ChatTemplate::kLlama3};
  EXPECT_EQ(turn_prompt(llama3, kQuestion, 0, {}), bytes(turn_prompt_text(llama3, kQuestion, 0, {})));
}

TEST(Conversation, PromptTokenIdsAreFedVerbatimWithoutATokenizer) {
  Question question = kQuestion;
  question.prompt_token_ids = {{5, 6}, {5, 6, 7, 8}};
  const PromptFormat none{nullptr, ChatTemplate::kVicuna};
  EXPECT_EQ(turn_prompt(none, question, 1, std::vector<std::vector<int64_t>>{{9}}), (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_THROW(turn_prompt(none, kQuestion, 0, {}), InputError);
}

}  // namespace
}  // namespace specgate
