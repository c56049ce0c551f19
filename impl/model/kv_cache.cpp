#include "impl/model/kv_cache.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace specgate {

KVCache::KVCache(int64_t num_layers, int64_t batch_size, int64_t num_kv_heads, int64_t slot_capacity,
                 int64_t head_dim, const at::TensorOptions& options)
    : batch_size_(batch_size) {
  TORCH_CHECK(num_layers > 0 && batch_size > 0 && slot_capacity > 0, "KVCache: empty shape");
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    for (auto* buffers : {&keys_, &values_, &spare_keys_, &spare_values_})
      buffers->push_back(at::zeros({batch_size, num_kv_heads, slot_capacity, head_dim}, options));
  }
}

void KVCache::reserve_slots(int64_t needed) {
  const int64_t capacity = slot_capacity();
  if (needed <= capacity) return;
  const int64_t grown = std::max(needed, 2 * capacity);
  for (auto* buffers : {&keys_, &values_, &spare_keys_, &spare_values_}) {
    for (at::Tensor& buffer : *buffers) {
      at::Tensor bigger = at::zeros({buffer.size(0), buffer.size(1), grown, buffer.size(3)}, buffer.options());
      bigger.narrow(2, 0, capacity).copy_(buffer);
      buffer = bigger;
    }
  }
}

std::pair<at::Tensor, at::Tensor> KVCache::append(int64_t layer, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(k.size(0) == batch_size_ && v.sizes() == k.sizes(), "KVCache::append: shape mismatch");
  const int64_t new_slots = k.size(2);
  reserve_slots(length_ + new_slots);
  at::Tensor keys = keys_[layer].narrow(0, 0, batch_size_);
  at::Tensor values = values_[layer].narrow(0, 0, batch_size_);
  keys.narrow(2, length_, new_slots).copy_(k);
  values.narrow(2, length_, new_slots).copy_(v);
  return {keys.narrow(2, 0, length_ + new_slots), values.narrow(2, 0, length_ + new_slots)};
}

void KVCache::advance(int64_t num_slots) {
  TORCH_CHECK(length_ + num_slots <= slot_capacity(), "KVCache::advance past the written slots");
  length_ += num_slots;
}

void KVCache::shift_rows(std::span<const SlotRun> runs, int64_t new_length) {
  TORCH_CHECK(static_cast<int64_t>(runs.size()) == batch_size_, "KVCache::shift_rows: one run per row");
  for (const SlotRun& run : runs) {
    TORCH_CHECK(run.count >= 0 && run.source >= 0 && run.source + run.count <= length_ && run.target >= 0 &&
                    run.target + run.count <= new_length,
                "KVCache::shift_rows: run out of range");
  }
  reserve_slots(new_length);
  for (int64_t layer = 0; layer < num_layers(); ++layer) {
    for (auto [live, spare] : {std::pair{&keys_, &spare_keys_}, std::pair{&values_, &spare_values_}}) {
      for (int64_t row = 0; row < batch_size_; ++row) {
        const SlotRun& run = runs[row];
        if (run.count == 0) continue;
        (*spare)[layer][row].narrow(1, run.target, run.count).copy_((*live)[layer][row].narrow(1, run.source, run.count));
      }
      std::swap((*live)[layer], (*spare)[layer]);
    }
  }
  length_ = new_length;
}

void KVCache::select_rows(const at::Tensor& rows) {
  const int64_t kept = rows.size(0);
  TORCH_CHECK(kept > 0 && kept <= batch_size_, "KVCache::select_rows: bad row count");
  for (int64_t layer = 0; layer < num_layers(); ++layer) {
    for (auto [live, spare] : {std::pair{&keys_, &spare_keys_}, std::pair{&values_, &spare_values_}}) {
      at::Tensor out = (*spare)[layer].narrow(0, 0, kept).narrow(2, 0, length_);
      at::index_select_out(out, (*live)[layer].narrow(2, 0, length_), 0, rows);
      std::swap((*live)[layer], (*spare)[layer]);
    }
  }
  batch_size_ = kept;
}

void KVCache::truncate(int64_t new_length) {
  TORCH_CHECK(new_length >= 0 && new_length <= length_, "KVCache::truncate: bad length");
  length_ = new_length;
}

void KVCache::reshape(int64_t batch_size, int64_t length) {
  TORCH_CHECK(batch_size > 0 && batch_size <= keys_.front().size(0) && length >= 0, "KVCache::reshape: bad shape");
  reserve_slots(length);
  batch_size_ = batch_size;
  length_ = length;
}

void KVCache::copy_rows_from(const KVCache& source, std::span<const RowRun> runs) {
  TORCH_CHECK(source.num_layers() == num_layers(), "KVCache::copy_rows_from: layer counts differ");
  int64_t needed = 0;
  for (const RowRun& run : runs) {
    const SlotRun& slots = run.slots;
    TORCH_CHECK(run.source_row >= 0 && run.source_row < source.keys_.front().size(0) && run.target_row >= 0 &&
                    run.target_row < keys_.front().size(0) && slots.count >= 0 && slots.source >= 0 &&
                    slots.source + slots.count <= source.slot_capacity() && slots.target >= 0,
                "KVCache::copy_rows_from: run out of range");
    needed = std::max(needed, slots.target + slots.count);
  }
  reserve_slots(needed);
  for (int64_t layer = 0; layer < num_layers(); ++layer) {
    for (auto [to, from] : {std::pair{&keys_, &source.keys_}, std::pair{&values_, &source.values_}}) {
      for (const RowRun& run : runs) {
        if (run.slots.count == 0) continue;
        (*to)[layer][run.target_row].narrow(1, run.slots.target, run.slots.count)
            .copy_((*from)[layer][run.source_row].narrow(1, run.slots.source, run.slots.count));
      }
    }
  }
}

at::Tensor KVCache::key_at(int64_t layer, int64_t row, int64_t slot) const {
  TORCH_CHECK(row < batch_size_ && slot < length_, "KVCache::key_at out of range");
  return keys_[layer][row].select(1, slot);
}

at::Tensor KVCache::value_at(int64_t layer, int64_t row, int64_t slot) const {
  TORCH_CHECK(row < batch_size_ && slot < length_, "KVCache::value_at out of range");
  return values_[layer][row].select(1, slot);
}

at::Tensor KVCache::keys(int64_t layer) const {
  return keys_[layer].narrow(0, 0, batch_size_).narrow(2, 0, length_);
}

at::Tensor KVCache::values(int64_t layer) const {
  return values_[layer].narrow(0, 0, batch_size_).narrow(2, 0, length_);
}

}  // namespace specgate
