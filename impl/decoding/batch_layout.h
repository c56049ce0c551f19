#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/decode_types.h"
#include "impl/model/kv_cache.h"

namespace specgate {

class Transformer;

// EXSPEC's pool: each sequence's K/V stored unpadded in its own row of each cache, from slot 0.
struct KVPool {
  KVCache target;
  std::optional<KVCache> draft;  // only with a draft model
};

// A left-padded batch (batch_state.h) and the target and draft caches that hold its K/V, laid
// out like it (DESIGN.md I1-I3): the one place that layout changes. Between passes cache row i
// holds, of batch row i, the K/V of its leading tokens in the slots the row's target_slots and
// draft_slots name; each row's last token is pending.
class BatchLayout {
 public:
  // Caches for up to `rows` rows of `slot_capacity` slots each; a draft cache only with a draft
  // model. Seeded faults in `options` bend the layout (fault_sites.h).
  BatchLayout(const Transformer& target, const Transformer* draft, int64_t rows, int64_t slot_capacity,
              const DecodeOptions& options);

  BatchState& state() { return state_; }
  const BatchState& state() const { return state_; }
  KVCache& target_cache() { return target_; }
  const KVCache& target_cache() const { return target_; }
  KVCache* draft_cache() { return draft_ ? &*draft_ : nullptr; }
  const KVCache* draft_cache() const { return draft_ ? &*draft_ : nullptr; }

  // A batch of rows that hold only their prompts, padded to the longest, in emptied caches.
  void start(std::vector<Row> rows);
  // After the prompt pass: both caches hold every row's prompt.
  void keep_prompts();
  // After a verification pass over every row's pending token and `drafted` draft positions,
  // before the row gains its tokens: row `row` keeps the slots of its content and its
  // `accepted` drafts in the target cache, and in the draft cache those of them the drafter
  // fed (all but the last).
  void keep(size_t row, int64_t accepted, int64_t drafted);

  // EQSPEC: the rows `going_on` (batch rows, ascending) stay, re-padded to their new minimal
  // width; each cache moves their slots with one gather per layer (or, with
  // options.naive_realign, as published decoders do).
  void realign(std::span<const int64_t> going_on);
  // EXSPEC: lays out `rows` as the batch, `width` slots wide, row i's K/V from slot
  // `paddings[i]`: the first held.size() from this batch's rows `held` (not moved at all when
  // each keeps its row and slots), the others from `pool`, row i from its slot `pooled[i]`.
  void compose(std::vector<Row> rows, std::span<const int64_t> held, const KVPool* pool,
               std::span<const int64_t> pooled, int64_t width, std::span<const int64_t> paddings);
  // Takes the rows out of the batch; their K/V stay in the caches for compose() or store().
  std::vector<Row> take_rows();
  // Writes the K/V of rows[i], held in this batch's row held[i], into `pool` at its slot
  // slots[i], unpadded: the row's slots then start at 0.
  void store(std::span<Row* const> rows, std::span<const int64_t> held, KVPool& pool,
             std::span<const int64_t> slots) const;

 private:
  const DecodeOptions& options_;
  KVCache target_;
  std::optional<KVCache> draft_;
  BatchState state_;
};

}  // namespace specgate
