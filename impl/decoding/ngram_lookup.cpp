#include "impl/decoding/ngram_lookup.h"

#include <algorithm>
#include <string>

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
      return std::vector<int64_t>(first, options.through_eos ? last : std::find_first_of(first, last, eos_ids.begin(), eos_ids.end()));
    }
  }
  return {};
}

}  // namespace specgate
