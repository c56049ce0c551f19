// Every built-in chat template against the checkpoint family's own template, rendered by an
// independent renderer (Python Jinja2 on the real tokenizer_config.json files; FastChat's
// get_prompt for Vicuna): the Spec-Bench conversations, all turns, plus hand-picked hard text.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/bench/chat_template.h"
#include "impl/bench/question.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

struct Conversation {
  std::vector<std::string> turns, answers;
};

// Answers as engines give them: surrounding whitespace, Unicode spaces, an empty one, reasoning.
std::vector<std::string> answers_for(const Question& question) {
  static const std::vector<std::string> kStyles = {
      "Sure. ", "\n Here it is:\n1. one\n2. two\n\n", "\xE3\x80\x80wide space\xC2\xA0", "",
      "<think>\nplan\n</think>\n\nThe answer.", "caf\xC3\xA9 \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB \xE4\xBD\xA0\xE5\xA5\xBD\x1c"};
  std::vector<std::string> answers;
  for (size_t t = 0; t + 1 < question.turns.size(); ++t)
    answers.push_back(kStyles[(question.question_id + t) % kStyles.size()]);
  return answers;
}

std::vector<Conversation> conversations() {
  std::vector<Conversation> all;
  for (const Question& q : read_questions(SPECGATE_SPECBENCH_QUESTIONS)) {
    const std::vector<std::string> answers = answers_for(q);
    for (size_t turn = 1; turn <= q.turns.size(); ++turn)
      all.push_back({{q.turns.begin(), q.turns.begin() + turn}, {answers.begin(), answers.begin() + turn - 1}});
  }
  all.push_back({{"  padded question \n"}, {}});
  all.push_back({{"tabs\tand\r\nCRLF\x0b", "second"}, {"\x1f\xE2\x80\x83 spaced answer \xE2\x80\xA8"}});
  all.push_back({{"<s>[INST] literal tags </s> <|im_end|> <|eot_id|>", "again"}, {"<|im_start|>x"}});
  all.push_back({{"one", "two", "three"}, {"a </think> b </think>\n\nc", "\n"}});
  return all;
}

nlohmann::json render_with_reference(const std::vector<Conversation>& all, const std::filesystem::path& dir) {
  nlohmann::json request = {{"conversations", nlohmann::json::array()}};
  for (const Conversation& c : all) request["conversations"].push_back({{"turns", c.turns}, {"answers", c.answers}});
  const std::filesystem::path request_path = dir / "request.json", output_path = dir / "rendered.json";
  std::ofstream(request_path) << request.dump();
  const std::string command = std::string("python3 ") + SPECGATE_CHAT_REFERENCE_SCRIPT + " " +
                              SPECGATE_TOKENIZER_REFERENCE + " " + SPECGATE_LLAMA2_CHAT_JINJA + " " +
                              request_path.string() + " > " + output_path.string();
  if (std::system(command.c_str()) != 0) throw std::runtime_error("reference renderer failed: " + command);
  std::ifstream rendered(output_path);
  return nlohmann::json::parse(rendered);
}

class ChatTemplateJinja : public TempFolderTest {};

TEST_F(ChatTemplateJinja, EveryTemplateRendersWhatTheCheckpointsTemplateRenders) {
  const std::vector<Conversation> all = conversations();
  const nlohmann::json reference = render_with_reference(all, dir_);
  for (ChatTemplate chat_template :
       {ChatTemplate::kVicuna, ChatTemplate::kChatml, ChatTemplate::kLlama3, ChatTemplate::kLlama2}) {
    const std::string name(chat_template_name(chat_template));
    const nlohmann::json& expected = reference.at(name);
    ASSERT_EQ(expected.size(), all.size()) << name;
    int64_t mismatches = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const std::string ours = render_chat(chat_template, all[i].turns, all[i].answers);
      if (ours == expected[i].get<std::string>()) continue;
      if (mismatches++ == 0)
        ADD_FAILURE() << name << ", conversation " << i << " (" << all[i].turns.size() << " turns):\nours:      "
                      << nlohmann::json(ours).dump() << "\nreference: " << expected[i].dump();
    }
    EXPECT_EQ(mismatches, 0) << name << ": " << mismatches << " of " << all.size() << " conversations differ";
  }
}

}  // namespace
}  // namespace specgate
