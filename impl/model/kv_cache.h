#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>

namespace specgate {

// One row's kept slots when a cache is re-laid out.
struct SlotRun {
  int64_t source = 0;
  int64_t target = 0;
  int64_t count = 0;
};

// One row's run of slots copied from one cache into another.
struct RowRun {
  int64_t source_row = 0;
  int64_t target_row = 0;
  SlotRun slots;
};

// Keys and values of one model for a rectangular batch: per layer a preallocated
// [batch capacity, H_kv, slot capacity, head_dim] buffer of which rows [0, batch_size())
// and slots [0, length()) are in use. All rows share the slot count: a row that holds
// fewer tokens than the widest is left-padded, and the attention mask hides its padding.
// Reorganising operations write into a second buffer of the same size and swap, so no
// step of decoding allocates.
class KVCache {
 public:
  KVCache(int64_t num_layers, int64_t batch_size, int64_t num_kv_heads, int64_t slot_capacity,
          int64_t head_dim, const at::TensorOptions& options);

  int64_t num_layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t batch_size() const { return batch_size_; }
  int64_t length() const { return length_; }
  int64_t slot_capacity() const { return keys_.front().size(2); }

  // Writes k, v [batch_size, H_kv, T, D] of `layer` at slots [length, length + T) and returns
  // the layer's keys and values over slots [0, length + T). The length itself moves on with
  // advance(T) once every layer has written.
  std::pair<at::Tensor, at::Tensor> append(int64_t layer, const at::Tensor& k, const at::Tensor& v);
  void advance(int64_t num_slots);

  // Rebuilds every layer so that row b's slots [target, target + count) hold its old slots
  // [source, source + count) (runs[b]); every other slot of the new length is left with
  // unspecified content (padding). One contiguous copy per row and layer.
  void shift_rows(std::span<const SlotRun> runs, int64_t new_length);
  // Keeps the given rows (int64 indices, in the given order) and drops the others.
  void select_rows(const at::Tensor& rows);
  // Forgets every slot from new_length on.
  void truncate(int64_t new_length);

  // Takes the shape of another batch: rows [0, batch_size) and slots [0, length) are in use,
  // with whatever they hold. Grows the slot capacity if needed.
  void reshape(int64_t batch_size, int64_t length);
  // Copies runs of slots of rows of `source` into rows of this cache, growing the slot
  // capacity if needed; the runs may read any allocated slot of `source`, in use or not.
  // One contiguous copy per run and layer.
  void copy_rows_from(const KVCache& source, std::span<const RowRun> runs);

  // Views of row `row`, slot `slot` of `layer`: [H_kv, head_dim].
  at::Tensor key_at(int64_t layer, int64_t row, int64_t slot) const;
  at::Tensor value_at(int64_t layer, int64_t row, int64_t slot) const;
  // Views of the used region of `layer`: [batch_size, H_kv, length, head_dim].
  at::Tensor keys(int64_t layer) const;
  at::Tensor values(int64_t layer) const;

 private:
  void reserve_slots(int64_t needed);

  std::vector<at::Tensor> keys_, values_;
  std::vector<at::Tensor> spare_keys_, spare_values_;
  int64_t batch_size_;
  int64_t length_ = 0;
};

}  // namespace specgate
