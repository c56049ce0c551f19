#include "impl/decoding/decoder.h"

#include <algorithm>
#include <map>

namespace specgate {

void feed(Decoder& decoder, std::span<const SequenceRequest> requests,
          const std::function<void(SequenceResult)>& finished,
          const std::function<void(const SequenceRequest&)>& admitting, const std::function<bool()>& stopping) {
  for (size_t next = 0; next < requests.size() || decoder.has_work();) {
    if (stopping && stopping()) return;
    for (; next < requests.size() && decoder.free_places() > 0; ++next) {
      if (admitting) admitting(requests[next]);
      decoder.admit(requests[next]);
    }
    for (SequenceResult& result : decoder.step()) finished(std::move(result));
  }
}

std::vector<SequenceRequest> shortest_prompt_first(std::span<const SequenceRequest> requests) {
  std::vector<SequenceRequest> order(requests.begin(), requests.end());
  std::stable_sort(order.begin(), order.end(), [](const SequenceRequest& a, const SequenceRequest& b) {
    return a.prompt.size() < b.prompt.size();
  });
  return order;
}

std::vector<SequenceResult> decode_all(Decoder& decoder, std::span<const SequenceRequest> requests,
                                       bool shortest_first) {
  std::map<int64_t, size_t> position;  // of each sequence in `requests`
  for (size_t i = 0; i < requests.size(); ++i) position.emplace(requests[i].sequence_index, i);
  std::vector<std::pair<size_t, SequenceResult>> finished;
  const std::vector<SequenceRequest> sorted = shortest_first ? shortest_prompt_first(requests) : std::vector<SequenceRequest>();
  feed(decoder, shortest_first ? std::span<const SequenceRequest>(sorted) : requests, [&](SequenceResult result) {
    finished.emplace_back(position.at(result.sequence_index), std::move(result));
  });
  std::stable_sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SequenceResult> results;
  for (auto& [index, result] : finished) results.push_back(std::move(result));
  return results;
}

}  // namespace specgate
