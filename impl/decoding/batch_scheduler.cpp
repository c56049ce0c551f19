#include "impl/decoding/batch_scheduler.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>

namespace specgate {
namespace {

// How many of the `by_slack`-ordered sequences must go now so that every later deadline can
// still be met with `batch_size` sequences a step.
size_t forced_now(std::span<const WindowEntry> window, const std::vector<size_t>& by_slack, int64_t batch_size,
                  int64_t max_wait) {
  int64_t forced = 0;
  for (size_t count = 1; count <= by_slack.size(); ++count) {
    const int64_t slack = std::max<int64_t>(max_wait - window[by_slack[count - 1]].waited, 0);
    // The first `count` sequences all have slack <= `slack`: the `slack` steps after this one
    // take at most slack * batch_size of them.
    forced = std::max(forced, static_cast<int64_t>(count) - slack * batch_size);
  }
  return static_cast<size_t>(forced);
}

}  // namespace

std::vector<size_t> by_priority(std::span<const WindowEntry> window) {
  std::vector<size_t> order(window.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return window[a].waited > window[b].waited; });
  return order;
}

BatchChoice choose_batch(std::span<const WindowEntry> window, int64_t batch_size, int64_t max_wait) {
  const size_t size = std::min(static_cast<size_t>(batch_size), window.size());
  const std::vector<size_t> priority = by_priority(window);
  BatchChoice choice;

  std::vector<bool> taken(window.size(), false);
  auto take = [&](size_t i) {
    if (!taken[i] && choice.members.size() < size) {
      taken[i] = true;
      choice.members.push_back(i);
    }
  };
  if (max_wait > 0) {
    const size_t forced = std::min(forced_now(window, priority, batch_size, max_wait), size);
    for (size_t n = 0; n < forced; ++n) take(priority[n]);
  }

  // The anchor length: that of a forced member, else the group that fills a batch (or comes
  // closest) and whose longest-waiting member has waited longest.
  int64_t anchor;
  if (!choice.members.empty()) {
    anchor = window[choice.members.front()].length;
  } else {
    std::map<int64_t, std::pair<size_t, int64_t>> groups;  // length -> (count, longest wait)
    for (const WindowEntry& entry : window) {
      auto& [count, waited] = groups[entry.length];
      ++count;
      waited = std::max(waited, entry.waited);
    }
    auto score = [&](const auto& group) { return std::pair{std::min(group.second.first, size), group.second.second}; };
    anchor = std::max_element(groups.begin(), groups.end(),
                              [&](const auto& a, const auto& b) { return score(a) < score(b); })
                 ->first;
  }
  std::vector<size_t> rest = priority;
  std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
    return std::abs(window[a].length - anchor) < std::abs(window[b].length - anchor);
  });
  for (size_t i : rest) take(i);

  choice.grouped = std::all_of(choice.members.begin(), choice.members.end(),
                               [&](size_t i) { return window[i].length == window[choice.members.front()].length; });
  return choice;
}

int64_t smallest_feasible_wait(int64_t window, int64_t batch_size) {
  return (window + batch_size - 1) / batch_size - 1;
}

}  // namespace specgate
