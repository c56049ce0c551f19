#include <gtest/gtest.h>

#include "impl/scoring/stream_timing.h"

namespace specgate {
namespace {

TEST(StreamTiming, FirstChunksGapsAndTokensAChunkOverTheStreamedTurns) {
  AnswerSpeed answer;
  answer.streams = std::vector<StreamRecord>{{{0.5, 0.75, 1.0}, {1, 2, 1}}, {{0.25}, {1}}};
  StreamTiming timing;
  timing.add(answer);
  timing.add(AnswerSpeed{});  // an answer received whole
  EXPECT_EQ(timing.turns, 2);
  EXPECT_EQ(timing.median_first_chunk_seconds(), 0.25) << "nearest rank: the lower of two";
  EXPECT_EQ(timing.median_gap_seconds(), 0.25);
  EXPECT_EQ(stream_timing_line(timing),
            "2 streamed turns: first chunk after 0.25 s (median; 90th percentile 0.5 s), 0.25 s between chunks (median), "
            "1.25 tokens a chunk, 25% of chunks carrying several");

  StreamTiming one_a_chunk;
  AnswerSpeed single_tokens;
  single_tokens.streams = std::vector<StreamRecord>{{{0.5, 0.5}, {1, 1}}};
  one_a_chunk.add(single_tokens);
  EXPECT_NE(stream_timing_line(one_a_chunk).find(", 1.00 tokens a chunk, 0% of chunks carrying several"), std::string::npos)
      << stream_timing_line(one_a_chunk);

  StreamTiming text_only;
  AnswerSpeed without_ids;
  without_ids.streams = std::vector<StreamRecord>{{{0.5, 0.5}, {}}};
  text_only.add(without_ids);
  EXPECT_EQ(stream_timing_line(text_only),
            "1 streamed turn: first chunk after 0.5 s (median; 90th percentile 0.5 s), 0 s between chunks (median), 2 chunks "
            "(the server gave no token ids)");
}

}  // namespace
}  // namespace specgate
