#include "impl/decoding/ngram_drafter.h"

#include <algorithm>
#include <string>

#include <ATen/ATen.h>

#include "impl/common/error.h"

namespace specgate {

void validate(const NgramOptions& options) {
  if (options.min_n < 1 || options.max_n < options.min_n || options.max_n > 64)
    throw InputError("n-gram sizes need 1 <= --ngram-min <= --ngram-max <= 64, got " + std::to_string(options.min_n) +
                     " and " + std::to_string(options.max_n));
}

std::vector<int64_t> ngram_proposal(std::span<const int64_t> context, int64_t k, const NgramOptions& options,
                                    std::span<const int64_t> eos_ids) {
  const int64_t length = static_cast<int64_t>(context.size());
  for (int64_t n = std::min(options.max_n, length - 1); n >= options.min_n; --n) {
    const std::span<const int64_t> suffix = context.last(n);
    for (int64_t at = 0; at + n < length; ++at) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + at)) continue;
      const auto first = context.begin() + at + n;
      const auto last = first + std::min(k, length - at - n);
      return std::vector<int64_t>(first, std::find_first_of(first, last, eos_ids.begin(), eos_ids.end()));
    }
  }
  return {};
}

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
