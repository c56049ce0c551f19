#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "conformance/engines/drafting.h"

namespace specgate::cli {

// --drafter, --ngram-min and --ngram-max: what a speculative engine drafts with.
struct DraftingFlags {
  std::string drafter = "model";
  int64_t ngram_min = 1;
  int64_t ngram_max = 3;
  bool ngram_through_eos = false;

  // InputError for n-gram sizes out of order.
  Drafting drafting() const;
};

void add_drafting_flags(CLI::App& command, DraftingFlags& flags);

// --batch-size, --window, --draft-tokens and the drafting flags: the batch and the round of a
// decoder that runs here (generate, serve, demo).
struct DecoderFlags {
  int64_t batch_size = 8;
  int64_t window = 0;  // EXSPEC's sequences active at once; 0 until given
  int64_t draft_tokens = 4;
  DraftingFlags drafting;

  // The window given, else twice the batch; InputError when it is smaller than the batch.
  int64_t exspec_window() const;
};

void add_decoder_flags(CLI::App& command, DecoderFlags& flags);

// --draft-tokens alone, K in [1, 64], for a command that sweeps batch sizes or reads K from
// answers; `help` says what it applies to.
CLI::Option* add_draft_tokens_flag(CLI::App& command, int64_t& draft_tokens, const std::string& help);

}  // namespace specgate::cli
