#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/faults.h"
#include "impl/model/kv_cache.h"

namespace specgate {

class Transformer;

// The target's cache and, with a draft model, the draft's: a batch's, EXSPEC's pool (each
// sequence unpadded in its own row, from slot 0) or a prompt pass's.
struct ModelCaches {
  KVCache target;
  std::optional<KVCache> draft;  // only with a draft model
};

// Prompts cached by a prompt pass (SpeculativeRound::prefill) for a batch or a pool to take in:
// the i-th in cache row cache_rows[i], at its row's slots.
struct StagedPrompts {
  ModelCaches caches;
  std::vector<int64_t> cache_rows;
};

// Writes the K/V of rows[i], held in cache row held[i] of `from` at the row's slots, into
// `pool` at its slot slots[i], unpadded: the row's slots then start at 0.
void store(std::span<Row* const> rows, const ModelCaches& from, std::span<const int64_t> held, ModelCaches& pool,
           std::span<const int64_t> slots, const FaultSet& faults);

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
  KVCache& target_cache() { return caches_.target; }
  const KVCache& target_cache() const { return caches_.target; }
  KVCache* draft_cache() { return caches_.draft ? &*caches_.draft : nullptr; }
  const KVCache* draft_cache() const { return caches_.draft ? &*caches_.draft : nullptr; }

  // `newcomers` join the batch after their prompt pass, their K/V read from `staged` (row i's
  // from cache row staged_rows[i]); every row is re-padded to the new minimal width.
  void admit(std::vector<Row> newcomers, const ModelCaches& staged, std::span<const int64_t> staged_rows);
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
  void compose(std::vector<Row> rows, std::span<const int64_t> held, const ModelCaches* pool,
               std::span<const int64_t> pooled, int64_t width, std::span<const int64_t> paddings);
  // Takes the rows out of the batch; their K/V stay in the caches for compose() or store().
  std::vector<Row> take_rows();
  // store() from this batch's rows `held`.
  void store(std::span<Row* const> rows, std::span<const int64_t> held, ModelCaches& pool,
             std::span<const int64_t> slots) const;

 private:
  const DecodeOptions& options_;
  ModelCaches caches_;
  BatchState state_;
};

}  // namespace specgate
