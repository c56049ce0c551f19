#include <algorithm>
#include <iostream>
#include <map>
#include <span>

#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/decoders.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/tests/decoding_test_support.h"
#include "oracle/oracle.h"

namespace specgate {
namespace {

using namespace specgate::test_support;

struct ExspecRun {
  std::vector<SequenceResult> results;
  DecodeStats stats;
  ExspecStats exspec_stats;
};

ExspecRun run_exspec(const std::vector<SequenceRequest>& requests, DrafterKind kind, const std::string& script_name,
                     const DecodeOptions& options, const ExspecOptions& exspec) {
  const ScriptedDrafts script = oracle_script(requests, options, script_name);
  const std::unique_ptr<Drafter> drafter = make_drafter(kind, script);
  ExspecRun run;
  run.results = exspec_generate(models().target, *drafter, requests, options, exspec, &run.stats, &run.exspec_stats);
  return run;
}

std::vector<int64_t> sequence_order(const std::vector<SequenceResult>& results) {
  std::vector<int64_t> order;
  for (const SequenceResult& r : results) order.push_back(r.sequence_index);
  return order;
}

std::vector<int64_t> sequence_order(const std::vector<SequenceRequest>& requests) {
  std::vector<int64_t> order;
  for (const SequenceRequest& r : requests) order.push_back(r.sequence_index);
  return order;
}

std::vector<SequenceRequest> equal_length_requests(int64_t count, int64_t length) {
  std::vector<SequenceRequest> requests = mixed_requests(count, 5);
  for (SequenceRequest& r : requests) r.prompt.resize(length, 42);
  return requests;
}

TEST(BatchScheduler, PrefersAFullGroupOfOneLength) {
  const std::vector<WindowEntry> window = {{5, 0}, {7, 3}, {5, 1}, {7, 0}, {9, 9}, {5, 0}};
  const BatchChoice choice = choose_batch(window, 3, 0);
  EXPECT_TRUE(choice.grouped);
  EXPECT_EQ(choice.members, (std::vector<size_t>{2, 0, 5}));
}

TEST(BatchScheduler, FallsBackToTheNearestLengthsWhenNoGroupFillsABatch) {
  const std::vector<WindowEntry> window = {{5, 0}, {7, 2}, {20, 0}, {8, 0}};
  const BatchChoice choice = choose_batch(window, 3, 0);
  EXPECT_FALSE(choice.grouped);
  EXPECT_EQ(choice.members, (std::vector<size_t>{1, 3, 0}));
}

TEST(BatchScheduler, AgingTakesSequencesWhoseDeadlineCannotWait) {
  // Four sequences of one length would form a group, but the two lone ones have waited two
  // steps of a bound of three, and the next step could not take both of them and the rest.
  const std::vector<WindowEntry> window = {{5, 0}, {5, 0}, {9, 3}, {11, 2}, {5, 0}, {5, 0}};
  EXPECT_EQ(choose_batch(window, 2, 3).members, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(choose_batch(window, 2, 0).members, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(smallest_feasible_wait(8, 2), 3);
  EXPECT_EQ(smallest_feasible_wait(2, 2), 0);
}

// Greedy EXSPEC equals the oracle per sequence for B in 1..8, W in B..4B, a pool larger than
// the window (so refills happen), mixed prompt lengths, every drafter; I1-I4 checked.
TEST(Exspec, GreedyEqualsTheOracleForEveryBatchWindowAndDrafter) {
  const DrafterKind kinds[] = {DrafterKind::kScriptedWithModel, DrafterKind::kModel, DrafterKind::kScripted,
                               DrafterKind::kNearTarget, DrafterKind::kScriptedRagged, DrafterKind::kNgram};
  int scenario = 0;
  for (int64_t batch : {1, 2, 3, 5, 8}) {
    for (int64_t window : {batch, 2 * batch + 1, 4 * batch}) {
      const int64_t k = 1 + scenario % 5;
      const DrafterKind kind = kinds[scenario % 6];
      ++scenario;
      SCOPED_TRACE("B " + std::to_string(batch) + " W " + std::to_string(window) + " K " + std::to_string(k) +
                   " drafter " + std::to_string(static_cast<int>(kind)));
      const std::vector<SequenceRequest> requests = mixed_requests(window + 3, 40 + scenario);
      const DecodeOptions options = greedy_options(k, 9);
      const ExspecRun run = run_exspec(requests, kind, "random", options, {batch, window, scenario % 2 == 0, 0});
      EXPECT_EQ(by_sequence(run.results), oracle_outputs(requests, options));
      EXPECT_EQ(sequence_order(run.results), sequence_order(requests));
    }
  }
}

TEST(Exspec, EosEndsASequenceMidRoundExactlyThere) {
  const std::vector<SequenceRequest> requests = mixed_requests(7, 13);
  DecodeOptions options = greedy_options(4, 14);
  options.eos_ids = {oracle_outputs(requests, options).begin()->second[5]};
  const auto expected = oracle_outputs(requests, options);
  for (const char* script : {"all-accept", "random"}) {
    EXPECT_EQ(by_sequence(run_exspec(requests, DrafterKind::kScriptedWithModel, script, options, {3, 5}).results),
              expected);
  }
}

TEST(Exspec, ScriptedAcceptanceCountsAreHonoured) {
  const std::vector<SequenceRequest> requests = mixed_requests(9, 3);
  const DecodeOptions options = greedy_options(3, 12);
  const ExspecRun run = run_exspec(requests, DrafterKind::kScriptedWithModel, "random", options, {3, 6});
  expect_scripted_acceptance(run.results, run.stats, options);
  EXPECT_EQ(static_cast<int64_t>(run.stats.latencies.size()), 9);
}

TEST(Exspec, IdenticalLengthsAndFullAcceptanceGroupEveryStep) {
  for (auto [batch, window, count] : {std::tuple{4, 8, 8}, std::tuple{3, 3, 9}, std::tuple{2, 6, 6}}) {
    SCOPED_TRACE("B " + std::to_string(batch) + " W " + std::to_string(window));
    const std::vector<SequenceRequest> requests = equal_length_requests(count, 6);
    const DecodeOptions options = greedy_options(3, 11);
    const ExspecRun run = run_exspec(requests, DrafterKind::kScriptedWithModel, "all-accept", options,
                                     {batch, window});
    EXPECT_EQ(by_sequence(run.results), oracle_outputs(requests, options));
    EXPECT_GT(run.exspec_stats.steps, 0);
    EXPECT_EQ(run.exspec_stats.grouping_rate(), 1.0);
    EXPECT_EQ(run.exspec_stats.fallback_steps, 0);
  }
}

TEST(Exspec, AgingBoundsHowLongASequenceWaits) {
  const std::vector<SequenceRequest> requests = mixed_requests(20, 8);
  const DecodeOptions options = greedy_options(2, 16);
  const auto expected = oracle_outputs(requests, options);
  for (int64_t bound : {3, 5}) {
    const ExspecRun run = run_exspec(requests, DrafterKind::kScriptedWithModel, "random", options, {2, 8, false, bound});
    EXPECT_EQ(by_sequence(run.results), expected);
    EXPECT_LE(run.exspec_stats.longest_wait, bound);
  }
  const ExspecRun unbounded = run_exspec(requests, DrafterKind::kScriptedWithModel, "random", options, {2, 8});
  std::cout << "[aging] longest wait without a bound: " << unbounded.exspec_stats.longest_wait << " steps\n";
  EXPECT_GT(unbounded.exspec_stats.longest_wait, 5);
  EXPECT_THROW(run_exspec(requests, DrafterKind::kScripted, "random", options, {2, 8, false, 2}), InputError);
  EXPECT_THROW(run_exspec(requests, DrafterKind::kScripted, "random", options, {4, 3}), InputError);
}

// In sampling mode a sequence's output depends on its own random stream only: EXSPEC with any
// batch and window, and EQSPEC, give every sequence the same tokens.
TEST(Exspec, SampledOutputsDoNotDependOnBatchComposition) {
  const std::vector<SequenceRequest> requests = mixed_requests(7, 21);
  DecodeOptions options = greedy_options(3, 10);
  options.sampling = {.temperature = 0.9, .top_k = 8, .top_p = 0.95, .seed = 11};
  ModelDrafter drafter(models().draft);
  const auto reference = by_sequence(eqspec_generate(models().target, drafter, requests, options));
  for (auto [batch, window] : {std::pair{1, 1}, std::pair{2, 5}, std::pair{3, 7}}) {
    EXPECT_EQ(by_sequence(exspec_generate(models().target, drafter, requests, options, {batch, window})), reference);
  }
}

// Requests admitted one by one at different steps, some with their own max_new_tokens,
// give what the oracle gives each alone; the window never takes more than its places.
TEST(ExspecDecoder, StaggeredArrivalsEqualTheOracle) {
  std::vector<SequenceRequest> requests = mixed_requests(11, 57);
  const DecodeOptions options = greedy_options(3, 9);
  for (size_t i = 0; i < requests.size(); i += 3) requests[i].max_new_tokens = 2 + static_cast<int64_t>(i);
  std::map<int64_t, std::vector<int64_t>> expected;
  int64_t capacity = 0;
  for (const SequenceRequest& r : requests) {
    const OracleOptions alone{.max_new_tokens = r.max_new_tokens.value_or(options.max_new_tokens), .top_logprobs = 0};
    expected[r.sequence_index] = oracle_generate(models().target, r.prompt, alone, 0).tokens;
    capacity = std::max(capacity, cache_capacity(r, options));
  }
  for (const DrafterKind kind : {DrafterKind::kModel, DrafterKind::kScriptedWithModel}) {
    const ScriptedDrafts script = oracle_script(requests, options, "random");
    const std::unique_ptr<Drafter> drafter = make_drafter(kind, script);
    ExspecDecoder decoder(models().target, *drafter, options, {.batch_size = 2, .window = 4}, capacity);
    std::map<int64_t, std::vector<int64_t>> outputs;
    size_t next = 0;
    for (int64_t step = 0; next < requests.size() || decoder.has_work(); ++step) {
      // One arrival every other step, two at every fifth: the window fills and drains unevenly.
      const int64_t arrivals = step % 5 == 0 ? 2 : step % 2;
      for (int64_t a = 0; a < arrivals && next < requests.size() && decoder.free_places() > 0; ++a)
        decoder.admit(requests[next++]);
      for (const SequenceResult& result : decoder.step()) {
        EXPECT_FALSE(outputs.contains(result.sequence_index));
        outputs[result.sequence_index] = result.tokens;
      }
    }
    EXPECT_EQ(outputs, expected);
    EXPECT_EQ(static_cast<int64_t>(decoder.stats().latencies.size()), 11);
    EXPECT_EQ(decoder.free_places(), 4);
  }
}

// A server's bound (--max-model-len) is far above what its requests take: the pool starts small
// and grows to the longest sequence it holds, answers unchanged, instead of zeroing the whole
// bound for every sequence of the window first.
TEST(ExspecDecoder, PoolGrowsToWhatItsSequencesTake) {
  std::vector<SequenceRequest> requests = mixed_requests(5, 23);
  requests[1].prompt.resize(300, 17);
  requests[3].prompt.resize(700, 29);
  const DecodeOptions options = greedy_options(3, 6);
  ModelDrafter drafter(models().draft);
  ExspecDecoder decoder(models().target, drafter, options, {.batch_size = 2, .window = 3}, 1 << 14);
  EXPECT_LE(decoder.pool_slots(), 256);
  std::map<int64_t, std::vector<int64_t>> outputs, expected;
  for (const SequenceRequest& request : requests) {
    const OracleOptions alone{.max_new_tokens = options.max_new_tokens, .top_logprobs = 0};
    expected[request.sequence_index] = oracle_generate(models().target, request.prompt, alone, 0).tokens;
    decoder.admit(request);
    while (decoder.has_work() && decoder.free_places() == 0)
      for (const SequenceResult& result : decoder.step()) outputs[result.sequence_index] = result.tokens;
  }
  while (decoder.has_work())
    for (const SequenceResult& result : decoder.step()) outputs[result.sequence_index] = result.tokens;
  EXPECT_EQ(outputs, expected);
  EXPECT_GE(decoder.pool_slots(), cache_capacity(requests[3], options));
  EXPECT_LT(decoder.pool_slots(), 2 * cache_capacity(requests[3], options));
}

// After every step each unfinished sequence shows what it generated so far: a prefix of its
// answer, grown by its prompt pass's token and then by each of its rounds' accepted tokens
// (EXSPEC may run a newcomer's prompt pass and first round in one step).
TEST(Decoders, VisitLiveShowsWhatEachRoundAppended) {
  const std::vector<SequenceRequest> requests = mixed_requests(7, 91);
  const DecodeOptions options = greedy_options(3, 13);
  int64_t capacity = 0;
  for (const SequenceRequest& r : requests) capacity = std::max(capacity, cache_capacity(r, options));
  for (const DecoderKind kind : {DecoderKind::kEqspec, DecoderKind::kExspec}) {
    ModelDrafter drafter(models().draft);
    const std::unique_ptr<Decoder> decoder = make_decoder(
        kind, models().target, &drafter,
        {.decode = options, .batch_size = 3, .exspec = {.batch_size = 3, .window = 5}, .sequence_capacity = capacity});
    std::map<int64_t, std::vector<std::vector<int64_t>>> seen;
    std::map<int64_t, SequenceResult> finished;
    for (size_t next = 0; next < requests.size() || decoder->has_work();) {
      while (next < requests.size() && decoder->free_places() > 0) decoder->admit(requests[next++]);
      for (SequenceResult& result : decoder->step()) finished[result.sequence_index] = std::move(result);
      decoder->visit_live([&](int64_t index, std::span<const int64_t> generated) {
        EXPECT_FALSE(finished.contains(index));
        std::vector<std::vector<int64_t>>& sizes = seen[index];
        if (sizes.empty() || sizes.back().size() != generated.size()) sizes.emplace_back(generated.begin(), generated.end());
      });
    }
    ASSERT_EQ(finished.size(), requests.size());
    for (const auto& [index, result] : finished) {
      std::vector<int64_t> grown{1};
      for (const int64_t appended : result.accept_lengths) grown.push_back(grown.back() + appended);
      grown.pop_back();  // the last round finished it
      std::vector<int64_t> sizes;
      for (const std::vector<int64_t>& generated : seen[index]) {
        sizes.push_back(static_cast<int64_t>(generated.size()));
        EXPECT_TRUE(std::equal(generated.begin(), generated.end(), result.tokens.begin())) << "sequence " << index;
      }
      if (is_exspec(kind) && !sizes.empty() && sizes.front() > 1) grown.erase(grown.begin());
      EXPECT_EQ(sizes, grown) << "sequence " << index << " under decoder " << static_cast<int>(kind);
    }
  }
}

TEST(ExspecDecoder, RefusesWhatItCannotHold) {
  const DecodeOptions options = greedy_options(2, 5);
  ModelDrafter drafter(models().draft);
  ExspecDecoder decoder(models().target, drafter, options, {.batch_size = 1, .window = 1}, 20);
  const SequenceRequest too_long{1, std::vector<int64_t>(14, 3)};  // 14 + 5 + 2 + 2 slots
  EXPECT_FALSE(decoder.fits(too_long));
  EXPECT_THROW(decoder.admit(too_long), InputError);
  EXPECT_THROW(decoder.admit({2, {}}), InputError);
  decoder.admit({3, {1, 2, 3}});
  EXPECT_EQ(decoder.free_places(), 0);
  EXPECT_THROW(decoder.admit({4, {1, 2}}), c10::Error);
}

// Each EXSPEC fault makes a check fail: an invariant, the oracle comparison, or the promise
// that every sequence comes back once, in order.
TEST(ExspecFaults, EveryExspecFaultIsCaught) {
  const std::vector<SequenceRequest> requests = mixed_requests(9, 31);
  for (Fault fault : all_faults()) {
    if (!is_exspec_only(fault)) continue;
    SCOPED_TRACE(std::string(fault_name(fault)));
    DecodeOptions options = greedy_options(3, 10);
    const auto expected = oracle_outputs(requests, options);
    options.faults.add(fault);
    std::string how;
    try {
      const ExspecRun run = run_exspec(requests, DrafterKind::kScriptedWithModel, "random", options, {3, 4});
      if (sequence_order(run.results) != sequence_order(requests)) {
        how = "sequences lost, duplicated or out of order: " + std::to_string(run.results.size()) + " results for " +
              std::to_string(requests.size()) + " requests";
      } else if (by_sequence(run.results) != expected) {
        how = "output differs from the oracle";
      }
    } catch (const InvariantViolation& e) {
      how = e.what();
    }
    EXPECT_FALSE(how.empty());
    std::cout << "[fault " << fault_name(fault) << "] " << how.substr(0, 160) << "\n";
  }
}

// Engines run a pool or batch after another and add up what each counted.
TEST(ExspecStats, PoolsAddUpEveryCounterAndTheirLatenciesInOrder) {
  DecodeStats total{.draft_seconds = 1, .verify_seconds = 2, .realign_seconds = 3, .other_seconds = 4, .rounds = 5,
                    .operators = 6, .host_syncs = 7, .counted_rounds = 8, .drafted = 9, .accepted = 10,
                    .generated = 11, .row_rounds = 12, .round_tokens = 13, .latencies = {{0, 1, 0.5}}};
  DecodeStats pool = total;
  pool.latencies = {{1, 2, 0.25}};
  total += pool;
  EXPECT_EQ(std::vector<double>({total.draft_seconds, total.verify_seconds, total.realign_seconds, total.other_seconds}),
            std::vector<double>({2, 4, 6, 8}));
  EXPECT_EQ(std::vector<int64_t>({total.rounds, total.operators, total.host_syncs, total.counted_rounds, total.drafted,
                                  total.accepted, total.generated, total.row_rounds, total.round_tokens}),
            std::vector<int64_t>({10, 12, 14, 16, 18, 20, 22, 24, 26}));
  ASSERT_EQ(total.latencies.size(), 2u);
  EXPECT_EQ(total.latencies[1].sequence_index, 1);

  ExspecStats steps{.steps = 4, .grouped_steps = 3, .fallback_steps = 1, .longest_wait = 2};
  steps += {.steps = 2, .grouped_steps = 1, .fallback_steps = 1, .longest_wait = 5};
  EXPECT_EQ(std::vector<int64_t>({steps.steps, steps.grouped_steps, steps.fallback_steps, steps.longest_wait}),
            std::vector<int64_t>({6, 4, 2, 5}));  // the longest wait is the longest of either
}

}  // namespace
}  // namespace specgate
