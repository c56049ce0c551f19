// The decoders behind `serve`: requests arriving at staggered times while others decode get
// the oracle's greedy answer, each with its own max_tokens, and a seeded sampled request the
// same tokens whatever arrives with it, greedy or sampled with other warpers.
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "conformance/serve/decode_loop.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate::cli {

void PrintTo(Engine engine, std::ostream* out) { *out << engine_name(engine); }  // for gtest's test names

namespace {

// The request's future generation, or nullopt when the loop refused it.
std::optional<std::future<Generated>> submit(DecodeLoop& loop, ServeRequest request) {
  auto promise = std::make_shared<std::promise<Generated>>();
  std::future<Generated> future = promise->get_future();
  const bool admitted = loop.submit(std::move(request), [promise](Outcome outcome) {
    if (auto* failure = std::get_if<std::exception_ptr>(&outcome)) return promise->set_exception(*failure);
    promise->set_value(std::move(std::get<Generated>(outcome)));
  });
  if (!admitted) return std::nullopt;
  return future;
}

class ServeEngineTest : public testing::TestWithParam<Engine> {};

// The engine over the tiny target with a near copy as its draft: batches of 3, a window of 5,
// K = 3, no EOS, pool slots for any request of up to 4096 tokens.
ServeEngineSettings settings_for(Engine engine) {
  DecodeOptions decode;
  decode.draft_tokens = 3;
  return {.engine = engine, .target = &test_support::models().target, .draft = &test_support::models().near_target,
          .decoder = {.decode = decode, .batch_size = 3, .exspec = {.window = 5}, .sequence_capacity = cache_capacity(4096, 3)}};
}

TEST_P(ServeEngineTest, GreedyAnswersEqualTheOraclesWhateverTheArrivalPattern) {
  const test_support::Models& models = test_support::models();
  DecodeLoop loop(
      [&] {
        return make_serve_engine(settings_for(GetParam()));
      },
      64);
  const std::vector<SequenceRequest> sequences = test_support::mixed_requests(14, 5);
  std::mt19937_64 rng(11);
  std::vector<std::pair<ServeRequest, std::future<Generated>>> sent;
  for (const SequenceRequest& sequence : sequences) {
    ServeRequest request{.prompt = sequence.prompt, .max_new_tokens = 4 + static_cast<int64_t>(rng() % 20)};
    std::optional<std::future<Generated>> future = submit(loop, request);
    ASSERT_TRUE(future.has_value());
    sent.emplace_back(std::move(request), std::move(*future));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 12));  // some arrive mid-decode, some together
  }
  for (auto& [request, future] : sent) {
    const std::vector<int64_t> expected =
        oracle_generate(models.target, request.prompt, {.max_new_tokens = request.max_new_tokens, .top_logprobs = 0}, 0).tokens;
    EXPECT_EQ(future.get().sequence.tokens, expected) << "prompt of " << request.prompt.size() << " tokens";
  }
}

TEST_P(ServeEngineTest, ASeededSampledRequestGivesTheSameTokensWhateverArrivesWithIt) {
  const test_support::Models& models = test_support::models();
  const auto engine = [&] {
    return make_serve_engine(settings_for(GetParam()));
  };
  const std::vector<SequenceRequest> sequences = test_support::mixed_requests(9, 3);
  const auto sampled = [&](size_t i, std::optional<uint64_t> seed) {
    return ServeRequest{.prompt = sequences[i].prompt, .max_new_tokens = 16,
                        .sampling = {.temperature = 1.0, .top_k = 0, .top_p = 0.9}, .seed = seed};
  };
  const ServeRequest probe = sampled(0, 7);
  const auto tokens_of = [](DecodeLoop& loop, ServeRequest request) {
    std::optional<std::future<Generated>> future = submit(loop, std::move(request));
    EXPECT_TRUE(future.has_value());
    return future->get().sequence.tokens;
  };
  DecodeLoop alone(engine, 64);
  const std::vector<int64_t> expected = tokens_of(alone, probe);

  // The same request again, after and amid other traffic that shares its batch: greedy, and
  // sampled with other warpers, with and without seeds.
  DecodeLoop busy(engine, 64);
  std::vector<std::pair<ServeRequest, std::future<Generated>>> others;
  std::optional<std::future<Generated>> amid;
  for (size_t i = 1; i < sequences.size(); ++i) {
    ServeRequest other{.prompt = sequences[i].prompt, .max_new_tokens = 12};
    if (i % 3 == 1) other.sampling = {.temperature = 0.6, .top_k = 5}, other.seed = i;
    if (i % 3 == 2) other.sampling = {.temperature = 1.4, .min_p = 0.1};
    others.emplace_back(other, *submit(busy, other));
    if (i == 4) amid = submit(busy, probe);
  }
  std::future<Generated> later = *submit(busy, probe);
  ASSERT_TRUE(amid.has_value());
  EXPECT_EQ(amid->get().sequence.tokens, expected) << "sent amid others";
  EXPECT_EQ(later.get().sequence.tokens, expected) << "sent after others";
  EXPECT_NE(tokens_of(busy, sampled(0, 8)), expected) << "another seed samples other tokens";
  for (auto& [request, future] : others) {
    const std::vector<int64_t> tokens = future.get().sequence.tokens;
    if (!request.sampling.greedy()) continue;
    EXPECT_EQ(tokens, oracle_generate(models.target, request.prompt, {.max_new_tokens = 12, .top_logprobs = 0}, 0).tokens)
        << "a greedy request beside sampled ones";
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
  DecodeLoop loop([&] { return make_serve_engine({.engine = Engine::kNonspecBatch, .target = &models.target}); }, 1);
  std::optional<std::future<Generated>> first = submit(loop, {.prompt = {1, 2, 3}, .max_new_tokens = 200});
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(submit(loop, {.prompt = {4}, .max_new_tokens = 2}).has_value()) << "full";
  loop.close();
  EXPECT_TRUE(loop.closing());
  EXPECT_EQ(first->get().sequence.tokens.size(), 200u) << "admitted before close: still finishes";
  loop.drain();
  EXPECT_FALSE(submit(loop, {.prompt = {4}, .max_new_tokens = 2}).has_value()) << "closed";
}

TEST_P(ServeEngineTest, AFailedStepFailsItsRequestsAndTheLoopServesOn) {
  const test_support::Models& models = test_support::models();
  DecodeLoop loop(
      [&] {
        return make_serve_engine(settings_for(GetParam()));
      },
      8);
  const int64_t beyond_vocabulary = models.target.config().vocab_size + 5;
  std::optional<std::future<Generated>> failing = submit(loop, {.prompt = {1, beyond_vocabulary}, .max_new_tokens = 4});
  ASSERT_TRUE(failing.has_value());
  EXPECT_ANY_THROW(failing->get());
  const std::vector<int64_t> prompt = {1, 2, 3};
  const std::vector<int64_t> expected = oracle_generate(models.target, prompt, {.max_new_tokens = 5, .top_logprobs = 0}, 0).tokens;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<std::future<Generated>> next = submit(loop, {.prompt = prompt, .max_new_tokens = 5});
    ASSERT_TRUE(next.has_value()) << "the loop refuses requests after a failure";
    EXPECT_EQ(next->get().sequence.tokens, expected);
  }
}

}  // namespace
}  // namespace specgate::cli
