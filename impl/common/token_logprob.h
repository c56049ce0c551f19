#pragma once

#include <cstdint>

namespace specgate {

// A token and the model's log-probability of it (natural log).
struct TokenLogprob {
  int64_t token_id;
  double logprob;
};

}  // namespace specgate
