#pragma once

#include <optional>

#include "impl/decoding/drafter.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"

namespace specgate {

// Drafts with a small model that keeps its own KV cache: each round feeds only what the cache
// lacks (the pending token, plus the last draft after a fully accepted round), never the
// whole sequence. With `script`, the model still runs every forward pass (so timing is real)
// but the scripted tokens replace its choices, and are what it feeds on.
class ModelDrafter final : public Drafter {
 public:
  explicit ModelDrafter(const Transformer& model, const ScriptedDrafts* script = nullptr)
      : model_(model), script_(script) {}

  void start(BatchState& state, const DecodeOptions& options) override;
  DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options) override;
  void select_rows(const at::Tensor& rows) override { cache_->select_rows(rows); }
  void gather_slots(const at::Tensor& source_slots) override { cache_->gather_slots(source_slots); }
  void truncate(int64_t length) override { cache_->truncate(length); }
  const Transformer* model() const override { return &model_; }
  const KVCache* cache() const override { return cache_ ? &*cache_ : nullptr; }

 private:
  const Transformer& model_;
  const ScriptedDrafts* script_;
  std::optional<KVCache> cache_;
};

}  // namespace specgate
