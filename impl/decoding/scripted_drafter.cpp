#include "impl/decoding/scripted_drafter.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace specgate {

at::Tensor ScriptedDrafts::tokens(const BatchState& state, int64_t k) const {
  at::Tensor tokens = at::empty({state.batch_size(), k}, at::TensorOptions().dtype(at::kLong));
  int64_t* out = tokens.data_ptr<int64_t>();
  for (const Row& row : state.rows) {
    const auto found = continuations.find(row.sequence_index);
    TORCH_CHECK(found != continuations.end(), "ScriptedDrafts: no continuation for sequence ", row.sequence_index);
    const std::vector<int64_t>& truth = found->second;
    const int64_t right = script(row.sequence_index, static_cast<int64_t>(row.accept_lengths.size()));
    for (int64_t step = 0; step < k; ++step) {
      const int64_t at = row.generated() + step;
      const int64_t true_token = at < static_cast<int64_t>(truth.size()) ? truth[at] : 0;
      *out++ = step < right ? true_token : (true_token + 1) % vocab_size;
    }
  }
  return tokens;
}

DraftProposal ScriptedDrafter::propose(BatchState& state, int64_t k, const DecodeOptions&, KVCache*) {
  if (!lengths_) return {script_.tokens(state, k), {}, {}};
  DraftProposal proposal;
  int64_t longest = 0;
  for (const Row& row : state.rows) {
    const int64_t length =
        std::clamp<int64_t>(lengths_(row.sequence_index, static_cast<int64_t>(row.accept_lengths.size())), 0, k);
    proposal.lengths.push_back(length);
    longest = std::max(longest, length);
  }
  proposal.tokens = script_.tokens(state, k).narrow(1, 0, longest).contiguous();
  return proposal;
}

}  // namespace specgate
