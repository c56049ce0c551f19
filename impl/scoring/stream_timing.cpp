#include "impl/scoring/stream_timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "impl/common/counted.h"
#include "impl/common/short_number.h"

namespace specgate {
namespace {

// The q-quantile by the nearest rank; `values` is not empty.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

std::string seconds(double value) { return short_number(value, 3) + " s"; }

}  // namespace

void StreamTiming::add(const AnswerSpeed& answer) {
  if (!answer.streams) return;
  for (const StreamRecord& turn : *answer.streams) {
    ++turns;
    chunks += static_cast<int64_t>(turn.chunk_seconds.size());
    if (!turn.chunk_seconds.empty()) first_chunk_seconds.push_back(turn.chunk_seconds.front());
    for (size_t i = 1; i < turn.chunk_seconds.size(); ++i) gaps.push_back(turn.chunk_seconds[i] - turn.chunk_seconds[i - 1]);
    for (const int64_t carried : turn.chunk_tokens) {
      ++counted_chunks;
      tokens += carried;
      several += carried > 1;
    }
  }
}

std::optional<double> StreamTiming::median_first_chunk_seconds() const {
  if (first_chunk_seconds.empty()) return std::nullopt;
  return quantile(first_chunk_seconds, 0.5);
}

std::optional<double> StreamTiming::median_gap_seconds() const {
  if (gaps.empty()) return std::nullopt;
  return quantile(gaps, 0.5);
}

std::string stream_timing_line(const StreamTiming& timing) {
  std::string line = counted(timing.turns, "streamed turn") + ":";
  if (timing.first_chunk_seconds.empty()) return line + " no chunk carried text or tokens";
  line += " first chunk after " + seconds(*timing.median_first_chunk_seconds()) + " (median; 90th percentile " +
          seconds(quantile(timing.first_chunk_seconds, 0.9)) + ")";
  if (const std::optional<double> gap = timing.median_gap_seconds()) line += ", " + seconds(*gap) + " between chunks (median)";
  if (timing.counted_chunks > 0) {
    const double per_chunk = static_cast<double>(timing.tokens) / static_cast<double>(timing.counted_chunks);
    const double share = 100.0 * static_cast<double>(timing.several) / static_cast<double>(timing.counted_chunks);
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.2f", per_chunk);  // a mean: "1.00 tokens a chunk", not "1 tokens"
    line += ", " + std::string(mean) + " tokens a chunk, " + short_number(share, 3) + "% of chunks carrying several";
  } else {
    line += ", " + counted(timing.chunks, "chunk") + " (the server gave no token ids)";
  }
  return line;
}

}  // namespace specgate
