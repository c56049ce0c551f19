// The decoders behind `serve`: requests arriving at staggered times while others decode get
// the oracle's greedy answer, each with its own max_tokens.
#include <chrono>
#include <future>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "conformance/serve/decode_loop.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate::cli {

void PrintTo(Engine engine, std::ostream* out) { *out << engine_name(engine); }  // for gtest's test names

namespace {

class ServeEngineTest : public testing::TestWithParam<Engine> {};

TEST_P(ServeEngineTest, GreedyAnswersEqualTheOraclesWhateverTheArrivalPattern) {
  const test_support::Models& models = test_support::models();
  DecodeLoop loop(make_serve_engine({.engine = GetParam(), .target = &models.target, .draft = &models.near_target,
                                     .batch_size = 3, .window = 5, .draft_tokens = 3, .eos_ids = {}}),
                  64);
  const std::vector<SequenceRequest> sequences = test_support::mixed_requests(14, 5);
  std::mt19937_64 rng(11);
  std::vector<std::pair<ServeRequest, std::future<Generated>>> sent;
  for (const SequenceRequest& sequence : sequences) {
    ServeRequest request{.prompt = sequence.prompt, .max_new_tokens = 4 + static_cast<int64_t>(rng() % 20)};
    std::optional<std::future<Generated>> future = loop.submit(request);
    ASSERT_TRUE(future.has_value());
    sent.emplace_back(std::move(request), std::move(*future));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 12));  // some arrive mid-decode, some together
  }
  for (auto& [request, future] : sent) {
    const std::vector<int64_t> expected =
        oracle_generate(models.target, request.prompt, {.max_new_tokens = request.max_new_tokens, .top_logprobs = 0}, 0).tokens;
    EXPECT_EQ(future.get().tokens, expected) << "prompt of " << request.prompt.size() << " tokens";
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, ServeEngineTest,
                         testing::Values(Engine::kExspec, Engine::kEqspec, Engine::kNonspecBatch, Engine::kOracle),
                         [](const auto& info) {
                           std::string name = engine_name(info.param);
                           std::erase(name, '-');
                           return name;
                         });

TEST(DecodeLoopTest, RefusesBeyondItsCapacityAndAfterClose) {
  const test_support::Models& models = test_support::models();
  DecodeLoop loop(make_serve_engine({.engine = Engine::kNonspecBatch, .target = &models.target}), 1);
  std::optional<std::future<Generated>> first = loop.submit({.prompt = {1, 2, 3}, .max_new_tokens = 200});
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(loop.submit({.prompt = {4}, .max_new_tokens = 2}).has_value()) << "full";
  loop.close();
  EXPECT_TRUE(loop.closing());
  EXPECT_EQ(first->get().tokens.size(), 200u) << "admitted before close: still finishes";
  loop.drain();
  EXPECT_FALSE(loop.submit({.prompt = {4}, .max_new_tokens = 2}).has_value()) << "closed";
}

}  // namespace
}  // namespace specgate::cli
