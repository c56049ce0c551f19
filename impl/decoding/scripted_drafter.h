#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "impl/decoding/drafter.h"

namespace specgate {

// How many of its drafts sequence `sequence_index` gets right in its `round`-th round.
using AcceptanceScript = std::function<int64_t(int64_t sequence_index, int64_t round)>;

// Drafts that follow a script: a row proposes its true continuation (what the target will
// produce) for as many tokens as the script says, then a wrong token, so acceptance patterns
// are chosen rather than hoped for.
struct ScriptedDrafts {
  std::map<int64_t, std::vector<int64_t>> continuations;  // by sequence index
  AcceptanceScript script;
  int64_t vocab_size = 0;

  // The K tokens every row of `state` proposes this round: int64 [B, K] on the host.
  at::Tensor tokens(const BatchState& state, int64_t k) const;
};

// How many tokens sequence `sequence_index` proposes in its `round`-th round (capped at K).
using DraftLengthScript = std::function<int64_t(int64_t sequence_index, int64_t round)>;

// Drafts from a script alone, without a draft model (ModelDrafter runs a model under a script);
// with `lengths`, ragged: each row proposes the first of its scripted tokens only. Its tokens
// are not drawn: q is a point mass on each.
class ScriptedDrafter final : public Drafter {
 public:
  explicit ScriptedDrafter(ScriptedDrafts script, DraftLengthScript lengths = {})
      : script_(std::move(script)), lengths_(std::move(lengths)) {}

  const Transformer* model() const override { return nullptr; }
  DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) override;

 private:
  ScriptedDrafts script_;
  DraftLengthScript lengths_;
};

}  // namespace specgate
