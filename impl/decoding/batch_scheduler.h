#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace specgate {

// One sequence of EXSPEC's window, as the scheduler sees it.
struct WindowEntry {
  int64_t length = 0;  // content tokens
  int64_t waited = 0;  // consecutive steps left out of the batch
};

struct BatchChoice {
  std::vector<size_t> members;  // indices into the window
  bool grouped = false;         // every member has the same length
};

// Picks the next batch of at most `batch_size` sequences from `window` (in admission order).
// It prefers sequences of one length, the group whose longest-waiting member has waited
// longest, and fills a batch no group can fill with the lengths nearest the group's. With
// `max_wait` > 0 it plans ahead, earliest deadline first, so that no sequence is left out
// more than `max_wait` steps in a row; that holds whenever max_wait >= ceil(W / B) - 1 for a
// window of W.
BatchChoice choose_batch(std::span<const WindowEntry> window, int64_t batch_size, int64_t max_wait);

// Indices into `window`, longest waiting first, then earliest admitted.
std::vector<size_t> by_priority(std::span<const WindowEntry> window);

// The smallest max_wait that choose_batch can honour for a window of `window` sequences.
int64_t smallest_feasible_wait(int64_t window, int64_t batch_size);

}  // namespace specgate
