#include "impl/decoding/scripted_drafter.h"

#include <c10/util/Exception.h>

namespace specgate {

int64_t ScriptedDrafts::token(const Row& row, int64_t step) const {
  const auto found = continuations.find(row.sequence_index);
  TORCH_CHECK(found != continuations.end(), "ScriptedDrafts: no continuation for sequence ", row.sequence_index);
  const std::vector<int64_t>& truth = found->second;
  const int64_t right = script(row.sequence_index, static_cast<int64_t>(row.accept_lengths.size()));
  const int64_t at = row.generated() + step;
  const int64_t true_token = at < static_cast<int64_t>(truth.size()) ? truth[at] : 0;
  return step < right ? true_token : (true_token + 1) % vocab_size;
}

void ScriptedDrafter::start(BatchState& state, const DecodeOptions&, KVCache*) {
  for (Row& row : state.rows) row.draft_cached = row.content();
}

DraftProposal ScriptedDrafter::propose(BatchState& state, int64_t k, const DecodeOptions&, KVCache*) {
  DraftProposal proposal;
  for (const Row& row : state.rows) {
    std::vector<int64_t>& tokens = proposal.tokens.emplace_back();
    for (int64_t step = 0; step < k; ++step) tokens.push_back(script_.token(row, step));
  }
  return proposal;
}

}  // namespace specgate
