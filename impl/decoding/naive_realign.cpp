#include "impl/decoding/naive_realign.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace specgate {
namespace {

// Row after row: [zeros for the padding, kept entries, zeros up to length], stacked.
at::Tensor concatenate_rows(const at::Tensor& old, const std::vector<SlotRun>& runs, const std::vector<int64_t>& to_first,
                            int64_t length) {
  const int64_t heads = old.size(1), head_dim = old.size(3);
  std::vector<at::Tensor> rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    const SlotRun& run = runs[i];
    const int64_t tail = length - to_first[i] - run.count;
    rows.push_back(at::cat({at::zeros({heads, to_first[i], head_dim}, old.options()),
                            old[run.row].narrow(1, run.first, run.count),
                            at::zeros({heads, tail, head_dim}, old.options())},
                           1));
  }
  return at::stack(rows);
}

}  // namespace

void naive_realign(KVCache& cache, const std::vector<SlotRun>& runs, const std::vector<int64_t>& to_first,
                   int64_t length) {
  TORCH_CHECK(runs.size() == to_first.size() && !runs.empty(), "naive_realign: one destination per run");
  std::vector<at::Tensor> keys, values;
  for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
    keys.push_back(concatenate_rows(cache.keys(layer), runs, to_first, length));
    values.push_back(concatenate_rows(cache.values(layer), runs, to_first, length));
  }
  cache.reshape(static_cast<int64_t>(runs.size()), length);
  for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
    cache.keys(layer).copy_(keys[layer]);
    cache.values(layer).copy_(values[layer]);
  }
}

}  // namespace specgate
