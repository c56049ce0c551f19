#include "impl/decoding/naive_realign.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

// Row after row: [zeros for the padding, kept entries, zeros up to new_length], stacked.
at::Tensor concatenate_rows(const at::Tensor& old, const std::vector<RowMove>& moves, int64_t new_length) {
  const int64_t heads = old.size(1), head_dim = old.size(3);
  std::vector<at::Tensor> rows;
  for (size_t row = 0; row < moves.size(); ++row) {
    const RowMove& move = moves[row];
    const int64_t tail = new_length - move.new_padding - move.kept;
    rows.push_back(at::cat({at::zeros({heads, move.new_padding, head_dim}, old.options()),
                            old[row].narrow(1, move.old_padding + move.offset, move.kept),
                            at::zeros({heads, tail, head_dim}, old.options())},
                           1));
  }
  return at::stack(rows);
}

}  // namespace

void naive_realign(KVCache& cache, const std::vector<RowMove>& moves, int64_t new_length) {
  TORCH_CHECK(static_cast<int64_t>(moves.size()) == cache.batch_size(), "naive_realign: one move per row");
  std::vector<at::Tensor> keys, values;
  for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
    keys.push_back(concatenate_rows(cache.keys(layer), moves, new_length));
    values.push_back(concatenate_rows(cache.values(layer), moves, new_length));
  }
  cache.reshape(cache.batch_size(), new_length);
  for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
    cache.keys(layer).copy_(keys[layer]);
    cache.values(layer).copy_(values[layer]);
  }
}

}  // namespace specgate
