#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/commands/commands.h"
#include "conformance/files/output_file.h"
#include "impl/bench/conversation.h"
#include "impl/common/error.h"

namespace specgate::cli {
namespace {

struct TokenizeOptions {
  std::filesystem::path target, bench, out;
  std::string text;
  std::string chat_template = "raw";
};

// The prompt text specgate encodes and its ids.
nlohmann::ordered_json prompt_line(const PromptFormat& format, const std::string& text) {
  return {{"chat_template", chat_template_name(format.chat_template)},
          {"prompt", text},
          {"token_ids", encode_turn_prompt(format, text)}};
}

void run_tokenize(const TokenizeOptions& o) {
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(o.target);
  const PromptFormat format{tokenizer.get(), chat_template_from_name(o.chat_template, "--chat-template")};
  check_template_tokens(format, "--chat-template");
  std::vector<nlohmann::ordered_json> lines;
  if (o.bench.empty()) lines.push_back(prompt_line(format, turn_prompt_text(format, Question{.turns = {o.text}}, 0, {})));
  for (const Question& question : o.bench.empty() ? std::vector<Question>{} : read_questions(o.bench)) {
    nlohmann::ordered_json line = {{"question_id", question.question_id}, {"turn", 0}};
    line.update(prompt_line(format, turn_prompt_text(format, question, 0, {})));
    if (!question.prompt_token_ids.empty())
      line["equals_bench_prompt_token_ids"] = line["token_ids"] == nlohmann::json(question.prompt_token_ids.front());
    lines.push_back(std::move(line));
  }
  const auto write = [&](std::ostream& out) {
    for (const nlohmann::ordered_json& line : lines)
      out << line.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) << "\n";
  };
  if (o.out.empty()) {
    write(std::cout);
    std::cout.flush();
    if (!std::cout) throw InputError("stdout: cannot write");
  } else {
    write_output_file("--out", o.out, write, {{"--target", o.target}, {"--bench", o.bench}});
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* c = app.add_subcommand(
      "tokenize",
      "Write the prompt specgate builds (text and token ids, one JSON line each) for a text or for the first turn of "
      "every bench question, to check it against an engine's own prompt (a bench line's prompt_token_ids are "
      "compared)");
  c->add_option("--target", o->target, "Checkpoint folder whose tokenizer encodes")->required();
  CLI::Option* text = c->add_option("--text", o->text, "One question's text");
  CLI::Option* bench = c->add_option("--bench", o->bench, "Spec-Bench question.jsonl");
  text->excludes(bench);
  bench->excludes(text);
  c->add_option("--chat-template", o->chat_template, "raw, vicuna, chatml, smollm2, llama3 or llama2")->capture_default_str();
  c->add_option("--out", o->out, "JSONL to write (default: stdout)");
  c->callback([o, c, text, bench] {
    if (text->count() + bench->count() == 0) throw InputError("tokenize: give --text TEXT or --bench FILE");
    run_tokenize(*o);
  });
}

}  // namespace specgate::cli
