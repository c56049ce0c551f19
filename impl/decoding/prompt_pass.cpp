#include "impl/decoding/prompt_pass.h"

#include <algorithm>
#include <numeric>

#include <ATen/ATen.h>

#include "impl/common/host_transfer.h"
#include "impl/decoding/token_tree.h"
#include "impl/model/transformer.h"

namespace specgate {

PromptPacking::PromptPacking(std::span<const Row> rows) : runs(rows.size()) {
  int64_t total = 0, longest = 0;
  for (const Row& row : rows) {
    total += row.content();
    longest = std::max(longest, row.content());
  }
  const int64_t budget = std::max(kPackTokens, longest);
  packs = std::max<int64_t>((total + budget - 1) / budget, 1);
  std::vector<size_t> longest_first(rows.size());
  std::iota(longest_first.begin(), longest_first.end(), 0);
  std::stable_sort(longest_first.begin(), longest_first.end(),
                   [&](size_t a, size_t b) { return rows[a].content() > rows[b].content(); });
  std::vector<int64_t> filled(packs, 0);
  for (size_t i : longest_first) {
    const int64_t pack = std::min_element(filled.begin(), filled.end()) - filled.begin();
    runs[i] = {pack, filled[pack], rows[i].content()};
    filled[pack] += rows[i].content();
  }
  width = *std::max_element(filled.begin(), filled.end());
}

PromptPass prompt_pass(const Transformer& model, std::span<const Row> rows, const PromptPacking& packing) {
  const int64_t packs = packing.packs, width = packing.width;
  const auto ids = at::TensorOptions().dtype(at::kLong);
  at::Tensor tokens = at::zeros({packs, width}, ids), positions = at::zeros({packs, width}, ids);
  // Which prompt each slot holds; a pack's unused tail holds none, each slot on its own.
  at::Tensor prompt = -1 - at::arange(packs * width, ids).view({packs, width});
  auto token = tokens.accessor<int64_t, 2>(), position = positions.accessor<int64_t, 2>();
  auto owner = prompt.accessor<int64_t, 2>();
  for (size_t i = 0; i < rows.size(); ++i) {
    const SlotRun& run = packing.runs[i];
    for (int64_t j = 0; j < run.count; ++j) {
      token[run.row][run.first + j] = rows[i].tokens[j];
      position[run.row][run.first + j] = j;
      owner[run.row][run.first + j] = static_cast<int64_t>(i);
    }
  }
  const c10::Device device = model.options().device();
  tokens = upload(tokens, device);
  positions = upload(positions, device);
  prompt = upload(prompt, device);
  // With one prompt a pack, [packs, width] keys, causal as any pass; else each query's own [packs, width, width].
  std::vector<int64_t> lengths(packs);
  for (const SlotRun& run : packing.runs) lengths[run.row] = run.count;
  const at::Tensor valid =
      static_cast<int64_t>(rows.size()) == packs
          ? at::arange(width, ids.device(device)).unsqueeze(0).lt(upload(at::tensor(lengths, ids), device).unsqueeze(1))
          : prompt.unsqueeze(2).eq(prompt.unsqueeze(1)).logical_and(
                within_window(positions, positions, model.config().sliding_window));

  PromptPass pass{model.make_cache(packs, width), at::Tensor()};
  const at::Tensor hidden = model.forward(tokens, positions, valid, &pass.cache);
  std::vector<int64_t> pack, last;
  for (const SlotRun& run : packing.runs) {
    pack.push_back(run.row);
    last.push_back(run.first + run.count - 1);
  }
  pass.last_hidden = hidden.index({upload(at::tensor(pack, ids), device), upload(at::tensor(last, ids), device)});
  return pass;
}

}  // namespace specgate
