#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impl/scoring/answer_reader.h"

namespace specgate {

// What one side's streamed answers were like to a client reading them: when each turn's first
// chunk came, the gaps between chunks, and how many tokens a chunk carried, which shows
// whether a server's speculation is visible in its stream.
struct StreamTiming {
  int64_t turns = 0;                        // streamed turns
  std::vector<double> first_chunk_seconds;  // per streamed turn that had a chunk
  std::vector<double> gaps;                 // seconds between consecutive chunks of a turn
  int64_t chunks = 0;
  int64_t counted_chunks = 0, tokens = 0;  // chunks whose tokens the server gave, and their tokens
  int64_t several = 0;                     // of the counted, those carrying more than one token

  void add(const AnswerSpeed& answer);
  bool any() const { return turns > 0; }
  // Medians by the nearest rank; none without a value.
  std::optional<double> median_first_chunk_seconds() const;
  std::optional<double> median_gap_seconds() const;
};

// "30 streamed turns: first chunk after 0.12 s (median; 90th percentile 0.31 s), 0.02 s between
// chunks (median), 2.41 tokens a chunk, 38% of chunks carrying several".
std::string stream_timing_line(const StreamTiming& timing);

}  // namespace specgate
