#include "impl/decoding/ngram_drafter.h"

#include <algorithm>

#include <ATen/ATen.h>

namespace specgate {

NgramDrafter::NgramDrafter(NgramOptions options) : options_(options) { validate(options_); }

DraftProposal NgramDrafter::propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache*) {
  std::vector<std::vector<int64_t>> drafts;
  DraftProposal proposal;
  int64_t longest = 0;
  for (const Row& row : state.rows) {
    const int64_t keepable = std::clamp<int64_t>(row.max_new_tokens - row.generated() - 1, 0, k);
    std::vector<int64_t> draft = ngram_proposal(row.tokens, keepable, options_, options.eos_ids);
    proposal.lengths.push_back(static_cast<int64_t>(draft.size()));
    longest = std::max(longest, proposal.lengths.back());
    drafts.push_back(std::move(draft));
  }
  // Padding repeats each row's pending token; verification never keeps it.
  proposal.tokens = at::empty({state.batch_size(), longest}, at::TensorOptions().dtype(at::kLong));
  int64_t* out = proposal.tokens.data_ptr<int64_t>();
  for (size_t i = 0; i < drafts.size(); ++i, out += longest) {
    std::copy(drafts[i].begin(), drafts[i].end(), out);
    std::fill(out + drafts[i].size(), out + longest, state.rows[i].tokens.back());
  }
  return proposal;
}

}  // namespace specgate
