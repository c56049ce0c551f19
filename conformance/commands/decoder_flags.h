#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace specgate::cli {

// --batch-size, --window and --draft-tokens: the batch and the round of a decoder that runs
// here (generate, serve, demo).
struct DecoderFlags {
  int64_t batch_size = 8;
  int64_t window = 0;  // EXSPEC's sequences active at once; 0 until given
  int64_t draft_tokens = 4;

  // The window given, else twice the batch; InputError when it is smaller than the batch.
  int64_t exspec_window() const;
};

void add_decoder_flags(CLI::App& command, DecoderFlags& flags);

// --draft-tokens alone, K in [1, 64], for a command that sweeps batch sizes or reads K from
// answers; `help` says what it applies to.
CLI::Option* add_draft_tokens_flag(CLI::App& command, int64_t& draft_tokens, const std::string& help);

}  // namespace specgate::cli
