// The decoder interface's drivers (feed, decode_all) on a decoder of the test's own, and
// make_decoder: every kind it builds, from the one place that builds them.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include "impl/decoding/decoders.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/model_drafter.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using namespace specgate::test_support;

// Holds `places` requests at a time; a step finishes all of them, last admitted first, each
// with its sequence index as its one token (twice the first one, with `duplicates`).
class ListDecoder final : public Decoder {
 public:
  explicit ListDecoder(int64_t places, bool duplicates = false) : places_(places), duplicates_(duplicates) {}

  int64_t free_places() const override { return places_ - static_cast<int64_t>(held_.size()); }
  void admit(SequenceRequest request) override {
    admitted.push_back(request.sequence_index);
    held_.push_back(request.sequence_index);
  }
  bool has_work() const override { return !held_.empty(); }
  std::vector<SequenceResult> step() override {
    ++steps;
    std::vector<SequenceResult> finished;
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) finished.push_back({.sequence_index = *it, .tokens = {*it}});
    if (duplicates_ && !finished.empty()) finished.push_back(finished.front());
    held_.clear();
    return finished;
  }
  void cancel(int64_t sequence_index) override { std::erase(held_, sequence_index); }
  void visit_live(const LiveVisitor&) const override {}
  const DecodeStats& stats() const override { return stats_; }

  std::vector<int64_t> admitted;
  int64_t steps = 0;

 private:
  int64_t places_;
  bool duplicates_;
  std::vector<int64_t> held_;
  DecodeStats stats_;
};

// Sequences 10.. with prompts of the given lengths.
std::vector<SequenceRequest> requests_of(const std::vector<size_t>& lengths) {
  std::vector<SequenceRequest> requests;
  for (size_t i = 0; i < lengths.size(); ++i) {
    requests.push_back({.sequence_index = static_cast<int64_t>(10 + i), .prompt = std::vector<int64_t>(lengths[i], 5)});
  }
  return requests;
}

std::vector<int64_t> indices(const std::vector<SequenceResult>& results) {
  std::vector<int64_t> out;
  for (const SequenceResult& result : results) out.push_back(result.sequence_index);
  return out;
}

TEST(Feed, AdmitsInOrderAsPlacesFreeUpAndHandsOverEachAtItsStep) {
  ListDecoder decoder(2);
  std::vector<int64_t> told, admitted_before, finished;
  feed(
      decoder, requests_of({3, 1, 4, 1, 5}), [&](SequenceResult result) { finished.push_back(result.sequence_index); },
      [&](const SequenceRequest& request) {
        told.push_back(request.sequence_index);
        admitted_before.push_back(static_cast<int64_t>(decoder.admitted.size()));
      });
  EXPECT_EQ(decoder.admitted, (std::vector<int64_t>{10, 11, 12, 13, 14}));
  EXPECT_EQ(told, decoder.admitted);
  EXPECT_EQ(admitted_before, (std::vector<int64_t>{0, 1, 2, 3, 4})) << "told of each before it is admitted";
  EXPECT_EQ(decoder.steps, 3);
  EXPECT_EQ(finished, (std::vector<int64_t>{11, 10, 13, 12, 14})) << "in the order each step returned them";
}

TEST(DecodeAll, ReturnsTheResultsInTheOrderOfTheRequests) {
  ListDecoder decoder(2);
  EXPECT_EQ(indices(decode_all(decoder, requests_of({3, 1, 4, 1, 5}))), (std::vector<int64_t>{10, 11, 12, 13, 14}));

  ListDecoder sorted(2);
  const std::vector<SequenceResult> results = decode_all(sorted, requests_of({3, 1, 4, 1, 5}), /*shortest_first=*/true);
  EXPECT_EQ(sorted.admitted, (std::vector<int64_t>{11, 13, 10, 12, 14})) << "shortest prompt first, ties in order";
  EXPECT_EQ(indices(results), (std::vector<int64_t>{10, 11, 12, 13, 14}));
}

TEST(DecodeAll, KeepsWhatTheDecoderReturnedTwice) {
  ListDecoder decoder(3, /*duplicates=*/true);
  EXPECT_EQ(indices(decode_all(decoder, requests_of({2, 2}))), (std::vector<int64_t>{10, 11, 11}));
}

TEST(ShortestPromptFirst, IsStable) {
  const std::vector<SequenceRequest> order = shortest_prompt_first(requests_of({2, 1, 2, 1}));
  std::vector<int64_t> sequence;
  for (const SequenceRequest& request : order) sequence.push_back(request.sequence_index);
  EXPECT_EQ(sequence, (std::vector<int64_t>{11, 13, 10, 12}));
}

TEST(MakeDecoder, BuildsEveryKindAndEachGivesTheOraclesTokens) {
  const std::vector<SequenceRequest> requests = mixed_requests(5, 3);
  const DecoderSettings settings{.decode = greedy_options(3, 10),
                                 .batch_size = 3,
                                 .exspec = {.window = 6, .max_wait_steps = 2},
                                 .sequence_capacity = cache_capacity(requests, greedy_options(3, 10))};
  const std::map<int64_t, std::vector<int64_t>> oracle = oracle_outputs(requests, settings.decode);
  ModelDrafter drafter(models().draft);
  for (const DecoderKind kind : {DecoderKind::kNonspecBatch, DecoderKind::kEqspec, DecoderKind::kNaiveRealign,
                                 DecoderKind::kRollback, DecoderKind::kExspec, DecoderKind::kExspecAging}) {
    const std::unique_ptr<Decoder> decoder = make_decoder(kind, models().target, &drafter, settings);
    EXPECT_EQ(dynamic_cast<ExspecDecoder*>(decoder.get()) != nullptr, is_exspec(kind));
    EXPECT_EQ(decoder->free_places(), is_exspec(kind) ? 6 : 3) << "EXSPEC takes a window, the others a batch";
    const std::vector<SequenceResult> results = decode_all(*decoder, requests);
    ASSERT_EQ(results.size(), requests.size()) << "kind " << static_cast<int>(kind);
    for (const SequenceResult& result : results) {
      EXPECT_EQ(result.tokens, oracle.at(result.sequence_index)) << "kind " << static_cast<int>(kind);
    }
    const ExspecStats exspec = exspec_stats_of(*decoder);
    EXPECT_EQ(exspec.steps > 0, is_exspec(kind));
    EXPECT_EQ(decoder->stats().drafted > 0, kind != DecoderKind::kNonspecBatch) << "nonspec-batch drafts nothing";
  }
}

TEST(MakeDecoder, ASpeculativeDecoderNeedsADrafter) {
  const DecoderSettings settings{.decode = greedy_options(3, 10), .batch_size = 2, .sequence_capacity = 32};
  EXPECT_NO_THROW(make_decoder(DecoderKind::kNonspecBatch, models().target, nullptr, settings));
  EXPECT_THROW(make_decoder(DecoderKind::kEqspec, models().target, nullptr, settings), c10::Error);
  EXPECT_THROW(make_decoder(DecoderKind::kExspec, models().target, nullptr, settings), c10::Error);
}

TEST(MakeDecoder, OnlyExspecAdmitsTheShortestFirstAndOnlyWhenAsked) {
  DecoderSettings settings;
  EXPECT_FALSE(admits_shortest_first(DecoderKind::kExspec, settings));
  settings.exspec.sort_by_prompt_length = true;
  EXPECT_TRUE(admits_shortest_first(DecoderKind::kExspec, settings));
  EXPECT_TRUE(admits_shortest_first(DecoderKind::kExspecAging, settings));
  EXPECT_FALSE(admits_shortest_first(DecoderKind::kEqspec, settings));
}

}  // namespace
}  // namespace specgate
