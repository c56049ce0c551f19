#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>

namespace specgate {

// A run of one row's cache slots: `count` slots of row `row`, from slot `first`.
struct SlotRun {
  int64_t row = 0;
  int64_t first = 0;
  int64_t count = 0;
};

// Keys and values of one model for a rectangular batch: per layer one buffer holding K and V
// as [2, batch capacity, H_kv, slot capacity, head_dim], of which rows [0, batch_size()) and
// slots [0, length()) are in use. All rows share the slot count: a row that holds fewer
// tokens than the widest is left-padded, and the attention mask hides its padding. Every slot
// in use holds finite values, padding included, so that masked keys weigh exactly nothing.
//
// Re-layout is one batched indexing op per layer: each destination (row, head) reads its
// `length` slots from its own source (row, head) at its own offset (gather). On the CPU, a
// re-layout of the cache into itself whose rows keep their order (each reads a later or its own
// row) shifts every (row, head) window within its buffer instead, and needs no other memory.
// Any other gather from the cache into itself writes into one spare layer buffer, made on first
// need, that then takes the layer's place, the layer's old buffer becoming the spare for the
// next layer.
//
// A model whose every layer attends through a sliding window never reads a slot more than
// `attended_slots` before the length again: re-layouts move only those last slots of each row,
// so that their cost is bounded by the window, not by the sequence. The slots before hold
// stale but finite values.
class KVCache {
 public:
  KVCache(int64_t num_layers, int64_t batch_size, int64_t num_kv_heads, int64_t slot_capacity, int64_t head_dim,
          const at::TensorOptions& options, std::optional<int64_t> attended_slots = std::nullopt);

  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  int64_t batch_size() const { return batch_size_; }
  int64_t length() const { return length_; }
  int64_t slot_capacity() const { return slots_; }
  // The first slot a later pass may read: length() - attended_slots, or 0 without a window.
  int64_t first_attended_slot() const;
  // Bytes held, the spare layer buffer included once made.
  int64_t bytes() const;

  // Writes k, v [batch_size, H_kv, T, D] of `layer` at slots [length, length + T) and returns
  // the layer's keys and values over slots [0, length + T). The length itself moves on with
  // advance(T) once every layer has written.
  std::pair<at::Tensor, at::Tensor> append(int64_t layer, const at::Tensor& k, const at::Tensor& v);
  void advance(int64_t num_slots);
  // Forgets every slot from new_length on.
  void truncate(int64_t new_length);
  // Takes the shape of another batch: rows [0, batch_size) and slots [0, length) are in use,
  // with whatever they hold. Grows the slot capacity if needed.
  void reshape(int64_t batch_size, int64_t length);

  // Rows first_row + i (i < runs.size()) take the run runs[i] of `source` (this cache, or
  // another of the same model) at slots [to_first[i], to_first[i] + runs[i].count), and
  // finite values in their other slots up to length(): call reshape() first. Only slots from
  // first_attended_slot() on are written. A gather from this cache itself must lay out every
  // row in use (first_row 0, runs.size() == batch_size()).
  void gather(const KVCache& source, std::span<const SlotRun> runs, std::span<const int64_t> to_first,
              int64_t first_row = 0);
  // reshape(runs.size(), length), then gather(*this, runs, to_first): moves nothing when every
  // run already sits in its row at its slot and no slot is added.
  void relayout(std::span<const SlotRun> runs, std::span<const int64_t> to_first, int64_t length);
  // Rows rows[i] take the run runs[i] of `source` (another cache) at slots [0, runs[i].count):
  // sequences stored unpadded. The rows may lie past batch_size(). Only the last
  // attended_slots of each run are written.
  void scatter(const KVCache& source, std::span<const SlotRun> runs, std::span<const int64_t> rows);

  // Views of row `row`, slot `slot` of `layer`: [H_kv, head_dim].
  at::Tensor key_at(int64_t layer, int64_t row, int64_t slot) const;
  at::Tensor value_at(int64_t layer, int64_t row, int64_t slot) const;
  // Views of the used region of `layer`: [batch_size, H_kv, length, head_dim].
  at::Tensor keys(int64_t layer) const;
  at::Tensor values(int64_t layer) const;

 private:
  bool holds(const SlotRun& run) const;
  // [2, batch capacity * H_kv, slot capacity, head_dim]: a layer buffer by (row, head).
  at::Tensor by_row_head(const at::Tensor& buffer) const;
  // The (row, head) and slot indices that read `window` slots of each run, from
  // run.first - offsets[i] on: [runs * H_kv, 1] and [runs * H_kv, window], clamped to the cache.
  std::pair<at::Tensor, at::Tensor> window_index(std::span<const SlotRun> runs, std::span<const int64_t> offsets,
                                                 int64_t window) const;
  // gather() from this cache into itself on the CPU, the runs' rows strictly ascending; writes
  // slots from first_slot on.
  void shift_rows(std::span<const SlotRun> runs, std::span<const int64_t> to_first, int64_t first_slot);
  void reserve_slots(int64_t needed);

  std::vector<at::Tensor> layers_;  // [2, batch capacity, H_kv, slot capacity, head_dim]: K and V
  at::Tensor spare_;
  int64_t batch_capacity_, heads_, slots_, head_dim_;
  std::optional<int64_t> attended_slots_;
  int64_t batch_size_;
  int64_t length_ = 0;
};

}  // namespace specgate
