#pragma once

#include "impl/decoding/drafter.h"
#include "impl/decoding/fault_sites.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/model/transformer.h"

namespace specgate {

// Drafts with a small model through the draft cache: each round feeds only what the cache
// lacks (the pending token, plus the last draft after a fully accepted round), never the
// whole sequence. With `script`, the model still runs every forward pass (so timing is real)
// but the scripted tokens replace its choices, and are what it feeds on.
class ModelDrafter final : public Drafter {
 public:
  explicit ModelDrafter(const Transformer& model, const ScriptedDrafts* script = nullptr)
      : model_(model), script_(script) {}

  const Transformer* model() const override { return &model_; }
  DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) override;

 private:
  const Transformer& model_;
  const ScriptedDrafts* script_;
  StaleDraftDistributions stale_distributions_;
};

}  // namespace specgate
