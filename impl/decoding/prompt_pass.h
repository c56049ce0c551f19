#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"
#include "impl/model/kv_cache.h"

namespace specgate {

class Transformer;

// Prompts packed end to end into a few rows of one width, each prompt attending only to itself:
// a pass over them costs about the prompts' tokens, where a left-padded batch costs its rows
// times the longest prompt. The pack width is the longest prompt or kPackTokens, whichever is
// larger, and the prompts are dealt longest first to the emptiest row.
struct PromptPacking {
  static constexpr int64_t kPackTokens = 1024;

  explicit PromptPacking(std::span<const Row> rows);

  std::vector<SlotRun> runs;  // row i's prompt: its pack, first slot and length
  int64_t packs = 0;
  int64_t width = 0;  // the longest pack
};

// One model's prompt pass over packed prompts.
struct PromptPass {
  KVCache cache;           // [packs, width] slots: row i's K/V at packing.runs[i]
  at::Tensor last_hidden;  // [rows, hidden]: each row's last prompt token, final-normed
};

// Runs `model` over the prompts of `rows` (whose content is their prompt) as `packing` lays them out.
PromptPass prompt_pass(const Transformer& model, std::span<const Row> rows, const PromptPacking& packing);

}  // namespace specgate
