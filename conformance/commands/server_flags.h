#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "conformance/collect/collector.h"
#include "conformance/collect/dialect.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

// The flags of a command that asks a running server the questions of a bench: where it is, its
// API, how prompts are built, and the HTTP limits.
struct ServerFlags {
  std::string endpoint, api, model;
  std::filesystem::path bench, target;
  std::string turns = "first";
  std::string chat_template = "raw";
  int64_t max_new_tokens = 128;
  int64_t top_logprobs = 0;
  HttpLimits http;
  int64_t retries = 5;
  double backoff = 1.0;
  int64_t limit = 0;
  std::vector<int64_t> question_ids;
};

void add_server_flags(CLI::App& command, ServerFlags& flags);

// What the flags ask, as a collect job without its out file; greedy until the caller sets the
// sampling. The dialect and tokenizer it points to are returned in `dialect` and `tokenizer`.
// Throws InputError naming the flag at fault.
CollectJob server_job(const ServerFlags& flags, const CLI::App& command, std::unique_ptr<Dialect>& dialect,
                      std::unique_ptr<Tokenizer>& tokenizer);

}  // namespace specgate::cli
