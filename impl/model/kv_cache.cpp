#include "impl/model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "impl/common/host_transfer.h"

namespace specgate {
namespace {

at::Tensor index_tensor(const std::vector<int64_t>& values, c10::Device device) {
  return upload(at::tensor(values, at::TensorOptions().dtype(at::kLong)), device);
}

// Rows that keep their order: moved in ascending order within one buffer, none overwrites a
// run still to be read.
bool ascending_rows(std::span<const SlotRun> runs) {
  for (size_t i = 1; i < runs.size(); ++i)
    if (runs[i].row <= runs[i - 1].row) return false;
  return true;
}

// to[t] = from[clamp(t + shift, 0, slots - 1)] for first <= t < length, in slots of
// `slot_bytes`: what gather's index reads. `to` and `from` are the same window or disjoint ones.
void shift_window(char* to, const char* from, int64_t shift, int64_t first, int64_t length, int64_t slots,
                  int64_t slot_bytes) {
  if (to == from && shift == 0) return;
  const int64_t front = std::clamp<int64_t>(-shift, first, length);
  const int64_t back = std::clamp<int64_t>(slots - shift, front, length);
  if (back > front)
    std::memmove(to + front * slot_bytes, from + (front + shift) * slot_bytes, (back - front) * slot_bytes);
  // Within one window, the move above wrote neither the first slot (when front > 0) nor the last
  // (when back < length).
  for (int64_t t = first; t < front; ++t) std::memmove(to + t * slot_bytes, from, slot_bytes);
  for (int64_t t = back; t < length; ++t)
    std::memmove(to + t * slot_bytes, from + (slots - 1) * slot_bytes, slot_bytes);
}

}  // namespace

KVCache::KVCache(int64_t num_layers, int64_t batch_size, int64_t num_kv_heads, int64_t slot_capacity,
                 int64_t head_dim, const at::TensorOptions& options, std::optional<int64_t> attended_slots)
    : batch_capacity_(batch_size), heads_(num_kv_heads), slots_(slot_capacity), head_dim_(head_dim),
      attended_slots_(attended_slots), batch_size_(batch_size) {
  TORCH_CHECK(num_layers > 0 && batch_size > 0 && slot_capacity > 0, "KVCache: empty shape");
  TORCH_CHECK(!attended_slots || *attended_slots >= 0, "KVCache: negative attended slots");
  for (int64_t layer = 0; layer < num_layers; ++layer)
    layers_.push_back(at::zeros({2, batch_capacity_, heads_, slots_, head_dim_}, options));
}

int64_t KVCache::bytes() const {
  int64_t total = spare_.defined() ? static_cast<int64_t>(spare_.nbytes()) : 0;
  for (const at::Tensor& layer : layers_) total += static_cast<int64_t>(layer.nbytes());
  return total;
}

int64_t KVCache::first_attended_slot() const {
  return attended_slots_ ? std::max<int64_t>(length_ - *attended_slots_, 0) : 0;
}

at::Tensor KVCache::by_row_head(const at::Tensor& buffer) const {
  return buffer.view({2, batch_capacity_ * heads_, slots_, head_dim_});
}

bool KVCache::holds(const SlotRun& run) const {
  return run.row >= 0 && run.row < batch_capacity_ && run.first >= 0 && run.count >= 0 &&
         run.first + run.count <= slots_;
}

std::pair<at::Tensor, at::Tensor> KVCache::window_index(std::span<const SlotRun> runs,
                                                        std::span<const int64_t> offsets, int64_t window) const {
  std::vector<int64_t> row_heads, starts;
  for (size_t i = 0; i < runs.size(); ++i) {
    const SlotRun& run = runs[i];
    for (int64_t head = 0; head < heads_; ++head) {
      row_heads.push_back(run.row * heads_ + head);
      starts.push_back(run.first - offsets[i]);
    }
  }
  const c10::Device device = layers_.front().device();
  const at::Tensor slots = index_tensor(starts, device).unsqueeze(1) + at::arange(window, at::TensorOptions().dtype(at::kLong).device(device));
  // Slots before a run (padding) and after it read other slots of the same row: finite.
  return {index_tensor(row_heads, device).unsqueeze(1), slots.clamp(0, slots_ - 1)};
}

void KVCache::reserve_slots(int64_t needed) {
  if (needed <= slots_) return;
  const int64_t old_slots = slots_;
  slots_ = std::max(needed, 2 * old_slots);
  spare_ = at::Tensor();
  for (at::Tensor& layer : layers_) {
    at::Tensor grown = at::zeros({2, batch_capacity_, heads_, slots_, head_dim_}, layer.options());
    grown.narrow(3, 0, old_slots).copy_(layer);
    layer = grown;
  }
}

std::pair<at::Tensor, at::Tensor> KVCache::append(int64_t layer, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(k.size(0) == batch_size_ && v.sizes() == k.sizes(), "KVCache::append: shape mismatch");
  const int64_t new_slots = k.size(2);
  reserve_slots(length_ + new_slots);
  const at::Tensor rows = layers_[layer].narrow(1, 0, batch_size_).narrow(3, 0, length_ + new_slots);
  const at::Tensor key_slots = rows.select(0, 0), value_slots = rows.select(0, 1);
  key_slots.narrow(2, length_, new_slots).copy_(k);
  value_slots.narrow(2, length_, new_slots).copy_(v);
  return {key_slots, value_slots};
}

void KVCache::advance(int64_t num_slots) {
  TORCH_CHECK(length_ + num_slots <= slots_, "KVCache::advance past the written slots");
  length_ += num_slots;
}

void KVCache::truncate(int64_t new_length) {
  TORCH_CHECK(new_length >= 0 && new_length <= length_, "KVCache::truncate: bad length");
  length_ = new_length;
}

void KVCache::reshape(int64_t batch_size, int64_t length) {
  TORCH_CHECK(batch_size > 0 && batch_size <= batch_capacity_ && length >= 0, "KVCache::reshape: bad shape");
  reserve_slots(length);
  batch_size_ = batch_size;
  length_ = length;
}

void KVCache::relayout(std::span<const SlotRun> runs, std::span<const int64_t> to_first, int64_t length) {
  bool in_place = length <= length_ && to_first.size() == runs.size();
  for (size_t i = 0; in_place && i < runs.size(); ++i)
    in_place = runs[i].row == static_cast<int64_t>(i) && runs[i].first == to_first[i];
  reshape(static_cast<int64_t>(runs.size()), length);
  if (!in_place) gather(*this, runs, to_first);
}

void KVCache::gather(const KVCache& source, std::span<const SlotRun> runs, std::span<const int64_t> to_first,
                     int64_t first_row) {
  const int64_t rows = static_cast<int64_t>(runs.size());
  TORCH_CHECK(to_first.size() == runs.size() && first_row >= 0 && first_row + rows <= batch_size_,
              "KVCache::gather: rows out of range");
  TORCH_CHECK(source.num_layers() == num_layers() && source.heads_ == heads_ && source.head_dim_ == head_dim_,
              "KVCache::gather: caches of different models");
  const bool in_place = &source == this;
  TORCH_CHECK(!in_place || (first_row == 0 && rows == batch_size_), "KVCache::gather: a re-layout covers every row");
  for (size_t i = 0; i < runs.size(); ++i) {
    TORCH_CHECK(source.holds(runs[i]), "KVCache: slot run out of range");
    TORCH_CHECK(to_first[i] >= 0 && to_first[i] + runs[i].count <= length_, "KVCache::gather: run past the length");
  }
  if (rows == 0 || length_ == 0) return;
  const int64_t from = first_attended_slot();
  if (in_place && layers_.front().is_cpu() && ascending_rows(runs)) return shift_rows(runs, to_first, from);
  // Destination (row, head) i reads the slots [first - to_first + from, ... + length - from)
  // of its source (row, head), so that its run lands at to_first.
  std::vector<int64_t> offsets(to_first.begin(), to_first.end());
  for (int64_t& offset : offsets) offset -= from;
  const auto [row_heads, slots] = source.window_index(runs, offsets, length_ - from);
  const c10::List<c10::optional<at::Tensor>> index({c10::nullopt, row_heads, slots});
  for (int64_t layer = 0; layer < num_layers(); ++layer) {
    // Zeros: the slots before `from` are never written, and must stay finite.
    if (in_place && !spare_.defined()) spare_ = at::zeros_like(layers_.front());
    at::Tensor into = by_row_head(in_place ? spare_ : layers_[layer])
                          .narrow(1, first_row * heads_, rows * heads_)
                          .narrow(2, from, length_ - from);
    at::index_out(into, source.by_row_head(source.layers_[layer]), index);
    if (in_place) std::swap(layers_[layer], spare_);
  }
}

void KVCache::shift_rows(std::span<const SlotRun> runs, std::span<const int64_t> to_first, int64_t first_slot) {
  const int64_t slot_bytes = head_dim_ * layers_.front().element_size();
  const int64_t row_head_bytes = slots_ * slot_bytes;
  // One unit of work per layer, K or V, and head: its rows move in ascending order.
  at::parallel_for(0, num_layers() * 2 * heads_, 1, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t layer = unit / (2 * heads_), kv = unit / heads_ % 2, head = unit % heads_;
      char* buffer = static_cast<char*>(layers_[layer].data_ptr()) + kv * batch_capacity_ * heads_ * row_head_bytes;
      const auto window = [&](int64_t row) { return buffer + (row * heads_ + head) * row_head_bytes; };
      for (size_t i = 0; i < runs.size(); ++i)
        shift_window(window(static_cast<int64_t>(i)), window(runs[i].row), runs[i].first - to_first[i], first_slot,
                     length_, slots_, slot_bytes);
    }
  });
}

void KVCache::scatter(const KVCache& source, std::span<const SlotRun> runs, std::span<const int64_t> rows) {
  TORCH_CHECK(&source != this && rows.size() == runs.size(), "KVCache::scatter: needs another cache, a row per run");
  TORCH_CHECK(source.num_layers() == num_layers() && source.heads_ == heads_ && source.head_dim_ == head_dim_,
              "KVCache::scatter: caches of different models");
  int64_t longest = 0;
  for (const SlotRun& run : runs) {
    TORCH_CHECK(source.holds(run), "KVCache: slot run out of range");
    longest = std::max(longest, run.count);
  }
  if (longest == 0) return;
  reserve_slots(longest);
  // Each run's last `window` slots (all of a shorter run, and slots past it, never read).
  const int64_t window = attended_slots_ ? std::min(longest, *attended_slots_) : longest;
  std::vector<int64_t> targets, target_slots, offsets;
  for (size_t i = 0; i < runs.size(); ++i) {
    TORCH_CHECK(rows[i] >= 0 && rows[i] < batch_capacity_, "KVCache::scatter: row out of range");
    const int64_t skipped = std::max<int64_t>(runs[i].count - window, 0);
    offsets.push_back(-skipped);
    for (int64_t head = 0; head < heads_; ++head) {
      targets.push_back(rows[i] * heads_ + head);
      target_slots.push_back(skipped);
    }
  }
  const c10::Device device = layers_.front().device();
  const auto [row_heads, slots] = source.window_index(runs, offsets, window);
  const c10::List<c10::optional<at::Tensor>> from({c10::nullopt, row_heads, slots});
  const c10::List<c10::optional<at::Tensor>> to(
      {c10::nullopt, index_tensor(targets, device).unsqueeze(1),
       index_tensor(target_slots, device).unsqueeze(1) +
           at::arange(window, at::TensorOptions().dtype(at::kLong).device(device)).unsqueeze(0)});
  for (int64_t layer = 0; layer < num_layers(); ++layer)
    by_row_head(layers_[layer]).index_put_(to, at::index(source.by_row_head(source.layers_[layer]), from));
}

at::Tensor KVCache::key_at(int64_t layer, int64_t row, int64_t slot) const {
  TORCH_CHECK(row < batch_size_ && slot < length_, "KVCache::key_at out of range");
  return layers_[layer][0][row].select(1, slot);
}

at::Tensor KVCache::value_at(int64_t layer, int64_t row, int64_t slot) const {
  TORCH_CHECK(row < batch_size_ && slot < length_, "KVCache::value_at out of range");
  return layers_[layer][1][row].select(1, slot);
}

at::Tensor KVCache::keys(int64_t layer) const {
  return layers_[layer].select(0, 0).narrow(0, 0, batch_size_).narrow(2, 0, length_);
}

at::Tensor KVCache::values(int64_t layer) const {
  return layers_[layer].select(0, 1).narrow(0, 0, batch_size_).narrow(2, 0, length_);
}

}  // namespace specgate
