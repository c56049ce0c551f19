#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impl/bench/chat_template.h"
#include "impl/common/error.h"

namespace specgate {
namespace {

TEST(ChatTemplate, NamesRoundTripAndUnknownNamesAreRefused) {
  for (ChatTemplate t : {ChatTemplate::kRaw, ChatTemplate::kVicuna, ChatTemplate::kChatml, ChatTemplate::kLlama3,
                         ChatTemplate::kLlama2})
    EXPECT_EQ(chat_template_from_name(chat_template_name(t), "--chat-template"), t);
  try {
    chat_template_from_name("alpaca", "--chat-template");
    FAIL() << "alpaca was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--chat-template: unknown chat template 'alpaca' (expected raw, vicuna, chatml, smollm2, llama3 or llama2)");
  }
}

TEST(ChatTemplate, RawIsTheQuestionThenEachAnswerAndANewline) {
  const std::vector<std::string> turns = {"Q1", "Q2"}, answers = {"A1"};
  EXPECT_EQ(render_chat(ChatTemplate::kRaw, std::span(turns).first(1), {}), "Q1");
  EXPECT_EQ(render_chat(ChatTemplate::kRaw, turns, answers), "Q1A1\nQ2");
}

TEST(ChatTemplate, OnlyLlamaTemplatesRenderTheirBos) {
  EXPECT_TRUE(renders_bos(ChatTemplate::kLlama2));
  EXPECT_TRUE(renders_bos(ChatTemplate::kLlama3));
  EXPECT_FALSE(renders_bos(ChatTemplate::kRaw));
  EXPECT_FALSE(renders_bos(ChatTemplate::kVicuna));
  EXPECT_FALSE(renders_bos(ChatTemplate::kChatml));
}

TEST(ChatTemplate, StripRemovesWhatPythonStripRemoves) {
  EXPECT_EQ(strip_whitespace(" \t\n\x1c x y \xE3\x80\x80\xC2\xA0"), "x y");
  EXPECT_EQ(strip_whitespace("\xE2\x80\x8B" "x"), "\xE2\x80\x8B" "x");  // U+200B is not whitespace to Python
  EXPECT_EQ(strip_whitespace("   "), "");
  EXPECT_EQ(strip_whitespace("\xC3\xA9"), "\xC3\xA9");
}

}  // namespace
}  // namespace specgate
