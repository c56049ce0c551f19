// The decoders behind `serve`: requests arriving at staggered times while others decode get
// the oracle's greedy answer, each with its own max_tokens, and a seeded sampled request the
// same tokens whatever arrives with it, greedy or sampled with other warpers.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
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
std::optional<std::future<SequenceResult>> submit(DecodeLoop& loop, ServeRequest request) {
  auto promise = std::make_shared<std::promise<SequenceResult>>();
  std::future<SequenceResult> future = promise->get_future();
  const std::optional<int64_t> admitted = loop.submit(std::move(request), [promise](Outcome outcome) {
    if (auto* failure = std::get_if<std::exception_ptr>(&outcome)) return promise->set_exception(*failure);
    promise->set_value(std::move(std::get<SequenceResult>(outcome)));
  });
  if (!admitted) return std::nullopt;
  return future;
}

class ServeEngineTest : public testing::TestWithParam<Engine> {};
// The engines whose sampled rows draw the same tokens whatever shares their batch: all but
// rollback, which truncates every row to its batch's fewest accepted drafts (the tokens, not
// their distribution, then depend on the company).
class BatchIndependentSamplingTest : public testing::TestWithParam<Engine> {};

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
  std::vector<std::pair<ServeRequest, std::future<SequenceResult>>> sent;
  for (const SequenceRequest& sequence : sequences) {
    ServeRequest request{.prompt = sequence.prompt, .max_new_tokens = 4 + static_cast<int64_t>(rng() % 20)};
    std::optional<std::future<SequenceResult>> future = submit(loop, request);
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

TEST_P(BatchIndependentSamplingTest, ASeededSampledRequestGivesTheSameTokensWhateverArrivesWithIt) {
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
    std::optional<std::future<SequenceResult>> future = submit(loop, std::move(request));
    EXPECT_TRUE(future.has_value());
    return future->get().tokens;
  };
  DecodeLoop alone(engine, 64);
  const std::vector<int64_t> expected = tokens_of(alone, probe);

  // The same request again, after and amid other traffic that shares its batch: greedy, and
  // sampled with other warpers, with and without seeds.
  DecodeLoop busy(engine, 64);
  std::vector<std::pair<ServeRequest, std::future<SequenceResult>>> others;
  std::optional<std::future<SequenceResult>> amid;
  for (size_t i = 1; i < sequences.size(); ++i) {
    ServeRequest other{.prompt = sequences[i].prompt, .max_new_tokens = 12};
    if (i % 3 == 1) other.sampling = {.temperature = 0.6, .top_k = 5}, other.seed = i;
    if (i % 3 == 2) other.sampling = {.temperature = 1.4, .min_p = 0.1};
    others.emplace_back(other, *submit(busy, other));
    if (i == 4) amid = submit(busy, probe);
  }
  std::future<SequenceResult> later = *submit(busy, probe);
  ASSERT_TRUE(amid.has_value());
  EXPECT_EQ(amid->get().tokens, expected) << "sent amid others";
  EXPECT_EQ(later.get().tokens, expected) << "sent after others";
  EXPECT_NE(tokens_of(busy, sampled(0, 8)), expected) << "another seed samples other tokens";
  for (auto& [request, future] : others) {
    const std::vector<int64_t> tokens = future.get().tokens;
    if (!request.sampling.greedy()) continue;
    EXPECT_EQ(tokens, oracle_generate(models.target, request.prompt, {.max_new_tokens = 12, .top_logprobs = 0}, 0).tokens)
        << "a greedy request beside sampled ones";
  }
}

// Rollback cannot decode greedy and sampled rows in one batch; serve gives each kind batches
// of its own, and every request is answered.
TEST(ServeRollback, GreedyAndSampledRequestsSentTogetherAreDecodedInBatchesOfTheirOwn) {
  const test_support::Models& models = test_support::models();
  DecodeLoop loop([] { return make_serve_engine(settings_for(Engine::kRollback)); }, 64);
  std::vector<std::pair<ServeRequest, std::future<SequenceResult>>> sent;
  for (const SequenceRequest& sequence : test_support::mixed_requests(8, 6)) {
    ServeRequest request{.prompt = sequence.prompt, .max_new_tokens = 10};
    if (sent.size() % 2 == 1) request.sampling = {.temperature = 0.8, .top_k = 6}, request.seed = sent.size();
    std::optional<std::future<SequenceResult>> future = submit(loop, request);
    ASSERT_TRUE(future.has_value());
    sent.emplace_back(std::move(request), std::move(*future));
  }
  for (auto& [request, future] : sent) {
    const SequenceResult result = future.get();  // throws if the step failed
    EXPECT_EQ(result.tokens.size(), 10u);
    if (request.sampling.greedy()) {
      EXPECT_EQ(result.tokens, oracle_generate(models.target, request.prompt, {.max_new_tokens = 10, .top_logprobs = 0}, 0).tokens);
    }
  }
}

std::string test_name(const testing::TestParamInfo<Engine>& info) {
  std::string name = engine_name(info.param);
  std::erase(name, '-');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Engines, ServeEngineTest,
                         testing::Values(Engine::kExspec, Engine::kEqspec, Engine::kRollback, Engine::kNonspecBatch,
                                         Engine::kOracle),
                         test_name);
INSTANTIATE_TEST_SUITE_P(Engines, BatchIndependentSamplingTest,
                         testing::Values(Engine::kExspec, Engine::kEqspec, Engine::kNonspecBatch, Engine::kOracle),
                         test_name);

// The steps an engine took, and whether it had work left after the last.
struct StepCount {
  std::mutex mutex;
  std::condition_variable stepped;
  int64_t steps = 0;
  bool idle = true;
  bool stepping = false;  // a step has begun
  bool held = false;      // while true, a step waits before it begins stepping the engine

  // Waits until a step has begun and is held there.
  void wait_until_stepping() {
    std::unique_lock lock(mutex);
    stepped.wait(lock, [this] { return stepping; });
  }
  void release() {
    {
      const std::lock_guard lock(mutex);
      held = false;
    }
    stepped.notify_all();
  }

  // The steps taken once the engine has no work left.
  int64_t when_idle() {
    std::unique_lock lock(mutex);
    stepped.wait(lock, [this] { return idle; });
    return steps;
  }
};

class StepCounter : public ServeEngine {
 public:
  StepCounter(std::unique_ptr<ServeEngine> engine, StepCount& count) : engine_(std::move(engine)), count_(count) {}
  void admit(int64_t id, int64_t group, ServeRequest request) override {
    engine_->admit(id, group, std::move(request));
    const std::lock_guard lock(count_.mutex);
    count_.idle = false;
  }
  bool has_work() const override { return engine_->has_work(); }
  std::vector<SequenceResult> step() override {
    {
      std::unique_lock lock(count_.mutex);
      count_.stepping = true;
      count_.stepped.notify_all();
      count_.stepped.wait(lock, [this] { return !count_.held; });
    }
    std::vector<SequenceResult> finished = engine_->step();
    {
      const std::lock_guard lock(count_.mutex);
      ++count_.steps;
      count_.idle = !engine_->has_work();
    }
    count_.stepped.notify_all();
    return finished;
  }
  void cancel(int64_t id) override { engine_->cancel(id); }
  void visit_live(const Decoder::LiveVisitor& visit) const override { engine_->visit_live(visit); }

 private:
  std::unique_ptr<ServeEngine> engine_;
  StepCount& count_;
};

// A request for 4,000 tokens shares its batch with two others; the first to finish cancels it,
// mid-decode. It leaves before the next step, is never answered, and the third request, still
// decoding beside it, gets the oracle's tokens.
TEST_P(ServeEngineTest, ACancelledRequestLeavesMidDecodeAndTheOthersGoOnAsAlone) {
  const test_support::Models& models = test_support::models();
  StepCount count;
  DecodeLoop loop([&] { return std::make_unique<StepCounter>(make_serve_engine(settings_for(GetParam())), count); }, 8);
  const ServeRequest first{.prompt = {1, 2, 3}, .max_new_tokens = 40}, third{.prompt = {4, 5}, .max_new_tokens = 120};
  std::promise<std::optional<int64_t>> long_id;
  std::shared_future<std::optional<int64_t>> long_id_known = long_id.get_future().share();
  std::promise<SequenceResult> first_done;
  std::future<SequenceResult> first_future = first_done.get_future();
  ASSERT_TRUE(loop.submit(first, [&](Outcome outcome) {
    if (const auto id = long_id_known.get()) loop.cancel(*id);
    first_done.set_value(std::move(std::get<SequenceResult>(outcome)));
  }));
  std::atomic<bool> long_answered{false};
  long_id.set_value(loop.submit({.prompt = {6, 7, 8, 9}, .max_new_tokens = 4000}, [&](Outcome) { long_answered = true; }));
  std::optional<std::future<SequenceResult>> third_future = submit(loop, third);
  ASSERT_TRUE(third_future.has_value());
  const auto oracle = [&](const ServeRequest& request) {
    return oracle_generate(models.target, request.prompt, {.max_new_tokens = request.max_new_tokens, .top_logprobs = 0}, 0).tokens;
  };
  EXPECT_EQ(first_future.get().tokens, oracle(first));
  EXPECT_EQ(third_future->get().tokens, oracle(third)) << "decoding beside the cancelled request";
  // K = 3: decoding the long request to its end would take at least 4000 / 4 rounds.
  EXPECT_LT(count.when_idle(), 1000) << "the cancelled request was decoded on";
  EXPECT_FALSE(long_answered.load());
}

// exspec keeps a place of its window (5) that the choices of one request cannot take, and leaves
// no sequence out of its batches (3) more than a step in a row: beside 12 choices of 3,000
// tokens, a 4-token request admitted a step later is answered within a few rounds (a prompt
// pass and three rounds, each of which it may sit out once), not once a long choice finished.
TEST(ServeExspec, TheChoicesOfOneRequestLeaveAPlaceForAnother) {
  const std::unique_ptr<ServeEngine> engine = make_serve_engine(settings_for(Engine::kExspec));
  for (int64_t choice = 0; choice < 12; ++choice)
    engine->admit(choice, 0, {.prompt = {1, 2, 3}, .max_new_tokens = 3000, .seed = static_cast<uint64_t>(choice)});
  engine->step();
  const auto live = [&] {
    int64_t count = 0;
    engine->visit_live([&](int64_t, std::span<const int64_t>) { ++count; });
    return count;
  };
  EXPECT_EQ(live(), 4) << "the long request's choices in a window of 5";
  const std::vector<int64_t> prompt = {4, 5};
  engine->admit(12, 12, {.prompt = prompt, .max_new_tokens = 4});
  const std::vector<int64_t> expected =
      oracle_generate(test_support::models().target, prompt, {.max_new_tokens = 4, .top_logprobs = 0}, 0).tokens;
  for (int round = 1; round <= 10; ++round) {
    for (const SequenceResult& result : engine->step()) {
      ASSERT_EQ(result.sequence_index, 12) << "a choice of 3,000 tokens finished after " << round << " rounds";
      EXPECT_EQ(result.tokens, expected);
      return;
    }
  }
  FAIL() << "the 4-token request was not answered within 10 rounds";
}

// Returns the first sequence that finished once more, a step later, while it holds another, as
// a decoder that let a sequence into its window twice would.
class Duplicating : public ServeEngine {
 public:
  explicit Duplicating(std::unique_ptr<ServeEngine> engine) : engine_(std::move(engine)) {}
  void admit(int64_t id, int64_t group, ServeRequest request) override {
    ++admitted_;
    engine_->admit(id, group, std::move(request));
  }
  bool has_work() const override { return engine_->has_work(); }
  std::vector<SequenceResult> step() override {
    std::vector<SequenceResult> finished = engine_->step();
    if (!first_ && !finished.empty()) {
      first_ = finished.front();
    } else if (first_ && !returned_again_ && admitted_ >= 2 && engine_->has_work()) {
      returned_again_ = true;
      finished.push_back(*first_);
    }
    return finished;
  }
  void cancel(int64_t id) override { engine_->cancel(id); }
  void visit_live(const Decoder::LiveVisitor& visit) const override { engine_->visit_live(visit); }

 private:
  std::unique_ptr<ServeEngine> engine_;
  int64_t admitted_ = 0;
  std::optional<SequenceResult> first_;
  bool returned_again_ = false;
};

// The request returned first is answered; the other one the engine holds fails with the
// engine's fault named, and a fresh engine answers what comes next.
TEST(DecodeLoopTest, AnEngineThatReturnsARequestTwiceFailsTheRequestsItHolds) {
  DecodeLoop loop([&] { return std::make_unique<Duplicating>(make_serve_engine(settings_for(Engine::kExspec))); }, 8);
  std::optional<std::future<SequenceResult>> first = submit(loop, {.prompt = {1, 2}, .max_new_tokens = 4});
  std::optional<std::future<SequenceResult>> second = submit(loop, {.prompt = {3}, .max_new_tokens = 400});
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->get().tokens.size(), 4u);
  try {
    second->get();
    ADD_FAILURE() << "the request the broken engine held was answered";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("returned request 0 twice"), std::string::npos) << e.what();
  }
  std::optional<std::future<SequenceResult>> next = submit(loop, {.prompt = {4}, .max_new_tokens = 3});
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->get().tokens.size(), 3u);
}

// The engine is made, as it is stepped, on the loop's thread (the only one to compute while the
// loop runs), and a failure to make it is the constructor's.
TEST(DecodeLoopTest, MakesItsEngineOnItsOwnThreadAndThrowsWhatMakingItThrew) {
  std::thread::id made_on;
  {
    DecodeLoop loop([&] {
      made_on = std::this_thread::get_id();
      return make_serve_engine(settings_for(Engine::kRollback));
    }, 8);
    std::optional<std::future<SequenceResult>> answer = submit(loop, {.prompt = {1, 2}, .max_new_tokens = 2});
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->get().tokens.size(), 2u);
  }
  EXPECT_NE(made_on, std::thread::id());
  EXPECT_NE(made_on, std::this_thread::get_id());
  EXPECT_THROW(DecodeLoop([]() -> std::unique_ptr<ServeEngine> { throw std::invalid_argument("no engine"); }, 8),
               std::invalid_argument);
}

TEST(DecodeLoopTest, ACancelledWaitingRequestIsNeverAdmitted) {
  const test_support::Models& models = test_support::models();
  StepCount count;
  count.held = true;  // the first request's step waits until the second is cancelled
  DecodeLoop loop([&] { return std::make_unique<StepCounter>(make_serve_engine({.engine = Engine::kOracle, .target = &models.target}), count); }, 8);
  std::optional<std::future<SequenceResult>> first = submit(loop, {.prompt = {1, 2}, .max_new_tokens = 300});
  count.wait_until_stepping();
  std::atomic<bool> answered{false};
  const std::optional<int64_t> waiting = loop.submit({.prompt = {3}, .max_new_tokens = 5}, [&](Outcome) { answered = true; });
  ASSERT_TRUE(first.has_value() && waiting.has_value());
  loop.cancel(*waiting);
  loop.cancel(*waiting);  // twice: nothing more happens
  count.release();
  first->get();
  EXPECT_EQ(count.when_idle(), 1) << "the oracle decodes one request a step";
  EXPECT_FALSE(answered.load());
}

TEST(DecodeLoopTest, RefusesBeyondItsCapacityAndAfterClose) {
  const test_support::Models& models = test_support::models();
  DecodeLoop loop([&] { return make_serve_engine({.engine = Engine::kNonspecBatch, .target = &models.target}); }, 1);
  std::optional<std::future<SequenceResult>> first = submit(loop, {.prompt = {1, 2, 3}, .max_new_tokens = 200});
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(submit(loop, {.prompt = {4}, .max_new_tokens = 2}).has_value()) << "full";
  loop.close();
  EXPECT_TRUE(loop.closing());
  EXPECT_EQ(first->get().tokens.size(), 200u) << "admitted before close: still finishes";
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
  std::optional<std::future<SequenceResult>> failing = submit(loop, {.prompt = {1, beyond_vocabulary}, .max_new_tokens = 4});
  ASSERT_TRUE(failing.has_value());
  EXPECT_ANY_THROW(failing->get());
  const std::vector<int64_t> prompt = {1, 2, 3};
  const std::vector<int64_t> expected = oracle_generate(models.target, prompt, {.max_new_tokens = 5, .top_logprobs = 0}, 0).tokens;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<std::future<SequenceResult>> next = submit(loop, {.prompt = prompt, .max_new_tokens = 5});
    ASSERT_TRUE(next.has_value()) << "the loop refuses requests after a failure";
    EXPECT_EQ(next->get().tokens, expected);
  }
}

}  // namespace
}  // namespace specgate::cli
