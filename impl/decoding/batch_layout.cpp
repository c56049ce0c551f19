#include "impl/decoding/batch_layout.h"

#include <algorithm>
#include <numeric>

#include <c10/util/Exception.h>

#include "impl/decoding/fault_sites.h"
#include "impl/decoding/naive_realign.h"
#include "impl/model/transformer.h"

namespace specgate {
namespace {

// The slots of `runs` moved within `cache` to rows [0, runs.size()) at `to_first`.
void move_runs(KVCache& cache, const std::vector<SlotRun>& runs, const std::vector<int64_t>& to_first, int64_t length,
               const DecodeOptions& options) {
  if (options.naive_realign) return naive_realign(cache, runs, to_first, length);
  cache.relayout(runs, to_first, length);
}

}  // namespace

BatchLayout::BatchLayout(const Transformer& target, const Transformer* draft, int64_t rows, int64_t slot_capacity,
                         const DecodeOptions& options)
    : options_(options), caches_{target.make_cache(rows, slot_capacity), std::nullopt} {
  if (draft != nullptr) caches_.draft.emplace(draft->make_cache(rows, slot_capacity));
}

void BatchLayout::admit(std::vector<Row> newcomers, const ModelCaches& staged, std::span<const int64_t> staged_rows) {
  std::vector<Row> rows = take_rows();
  std::vector<int64_t> held(rows.size());
  std::iota(held.begin(), held.end(), 0);
  for (Row& row : newcomers) rows.push_back(std::move(row));
  int64_t width = 0;
  for (const Row& row : rows) width = std::max(width, row.content());
  std::vector<int64_t> paddings;
  for (const Row& row : rows) paddings.push_back(width - row.content());
  compose(std::move(rows), held, &staged, staged_rows, width, paddings);
}

void BatchLayout::keep(size_t row_index, int64_t accepted, int64_t k) {
  Row& row = state_.rows[row_index];
  const int64_t padding = state_.padding(row_index), content = row.content();
  const int64_t fed = k > 0 ? std::min(accepted, k - 1) : 0;
  row.target_slots = target_kept_under_faults({padding, content + accepted}, accepted, k, options_.faults);
  row.draft_slots = draft_kept_under_faults({padding, content + fed}, fed, accepted, k, options_.faults);
}

void BatchLayout::realign(std::span<const int64_t> going_on) {
  int64_t width = 0;
  for (int64_t i : going_on) width = std::max(width, state_.rows[i].content());
  width = realigned_width_under_faults(width, state_.width, options_.draft_tokens, options_.faults);
  std::vector<Row> rows;
  std::vector<int64_t> paddings;
  for (int64_t i : going_on) {
    paddings.push_back(width - state_.rows[i].content());
    rows.push_back(std::move(state_.rows[i]));
  }
  compose(std::move(rows), going_on, nullptr, {}, width, paddings);
}

void BatchLayout::compose(std::vector<Row> rows, std::span<const int64_t> held, const ModelCaches* pool,
                          std::span<const int64_t> pooled, int64_t width, std::span<const int64_t> paddings) {
  const size_t stay = held.size();
  TORCH_CHECK(rows.size() == stay + pooled.size() && paddings.size() == rows.size() && (pooled.empty() || pool),
              "BatchLayout::compose: every row needs its padding and one source");
  TORCH_CHECK(pooled.empty() || pool->draft.has_value() == caches_.draft.has_value(),
              "BatchLayout::compose: the pool holds other caches");
  const int64_t length = cached_slots(width);
  for (size_t b = 0; b < stay; ++b) {
    if (rows[b].target_slots.first != paddings[b] || held[b] != static_cast<int64_t>(b)) ++rows[b].realignments;
  }
  const std::vector<int64_t> stay_padding(paddings.begin(), paddings.begin() + stay);
  const std::vector<int64_t> in_padding(paddings.begin() + stay, paddings.end());
  const auto lay_out = [&](KVCache& cache, const KVCache* from_pool, RowSlots Row::*slots) {
    if (stay > 0) {
      std::vector<SlotRun> runs;
      for (size_t b = 0; b < stay; ++b) {
        const SlotRun run = (rows[b].*slots).in_row(held[b]);
        runs.push_back(slots == &Row::target_slots ? source_under_faults(run, stay_padding[b], options_.faults) : run);
      }
      move_runs(cache, runs, stay_padding, length, options_);
    }
    if (!pooled.empty()) {
      std::vector<SlotRun> runs;
      for (size_t b = stay; b < rows.size(); ++b) runs.push_back((rows[b].*slots).in_row(pooled[b - stay]));
      cache.reshape(static_cast<int64_t>(rows.size()), length);
      cache.gather(*from_pool, runs, in_padding, static_cast<int64_t>(stay));
    }
    for (size_t b = 0; b < rows.size(); ++b) (rows[b].*slots).first = paddings[b];
  };
  lay_out(caches_.target, pool ? &pool->target : nullptr, &Row::target_slots);
  if (caches_.draft) lay_out(*caches_.draft, pool ? &*pool->draft : nullptr, &Row::draft_slots);

  for (size_t b = 0; b < rows.size(); ++b) {
    Row& row = rows[b];
    const int64_t fresh = width - row.content();
    row.position_padding = b < stay ? position_padding_under_faults(fresh, row.position_padding, options_.faults) : fresh;
  }
  state_.rows = std::move(rows);
  state_.width = width;
}

std::vector<Row> BatchLayout::take_rows() {
  std::vector<Row> rows = std::move(state_.rows);
  state_.rows.clear();
  return rows;
}

void BatchLayout::store(std::span<Row* const> rows, std::span<const int64_t> held, ModelCaches& pool,
                        std::span<const int64_t> slots) const {
  specgate::store(rows, caches_, held, pool, slots, options_.faults);
}

void store(std::span<Row* const> rows, const ModelCaches& from, std::span<const int64_t> held, ModelCaches& pool,
           std::span<const int64_t> slots, const FaultSet& faults) {
  if (rows.empty()) return;
  TORCH_CHECK(pool.draft.has_value() == from.draft.has_value(), "store: the pool holds other caches");
  const std::vector<int64_t> to = pool_slots_under_faults({slots.begin(), slots.end()}, faults);
  const auto write = [&](KVCache& into, const KVCache& cache, RowSlots Row::*row_slots) {
    std::vector<SlotRun> runs;
    for (size_t i = 0; i < rows.size(); ++i) runs.push_back((rows[i]->*row_slots).in_row(held[i]));
    into.scatter(cache, runs, to);
  };
  write(pool.target, from.target, &Row::target_slots);
  if (from.draft) write(*pool.draft, *from.draft, &Row::draft_slots);
  for (Row* row : rows) row->target_slots.first = row->draft_slots.first = 0;
}

}  // namespace specgate
