// `serve` under load against offline EXSPEC on the fixture pair: clients send the sample
// bench's prompts (as token ids, vLLM's dialect) to an in-process server running EXSPEC, 1, 4,
// 16 or 64 at a time (requests/s, tokens/s, P50 and P99 latency in ms, requests sent again
// after a dropped connection); a burst of 64 clients that each open a connection at the same
// moment and send one request, without retries (answered, failed, latency percentiles); then
// serve at 16 clients and exspec_generate at the same batch size and window, alternating.
//   serve_load_benchmark --fixtures=DIR --bench=FILE [--benchmark_enable_random_interleaving=true]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include <benchmark/benchmark.h>

#include "conformance/collect/dialect.h"
#include "conformance/collect/http_client.h"
#include "conformance/engines/model_pair.h"
#include "conformance/serve/completion_server.h"
#include "impl/bench/question.h"
#include "impl/common/allocator_tuning.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/model_drafter.h"

namespace specgate::cli {
namespace {

constexpr int64_t kBatchSize = 8, kWindow = 16, kDraftTokens = 4, kMaxNewTokens = 64, kMaxModelLen = 4096;

std::filesystem::path fixtures_dir = "build/fixture_pair";
std::filesystem::path bench_file = "fixtures/bench/sample.jsonl";

using Clock = std::chrono::steady_clock;

// The fixture pair, the bench's prompts, and a server running EXSPEC on them.
struct Setup {
  ModelPair models;
  std::vector<std::vector<int64_t>> prompts;
  std::optional<DecodeLoop> loop;
  ServeReporter reporter{models.target, {}};
  std::atomic<bool> stop{false};
  std::thread server;
  int port = 0;

  Setup() : models(load_model_pair(fixtures_dir / "target", fixtures_dir / "draft", at::kFloat, c10::kCPU)) {
    for (const Question& question : read_questions(bench_file)) prompts.push_back(models.tokenizer->encode_prompt(question.turns[0]));
    loop.emplace(
        [this] {
          DecodeOptions decode;
          decode.draft_tokens = kDraftTokens;
          decode.eos_ids = models.target.config().eos_token_ids;
          return make_serve_engine({.engine = Engine::kExspec, .target = &models.target, .draft = models.draft_or_null(),
                                    .decoder = {.decode = decode, .batch_size = kBatchSize, .exspec = {.window = kWindow},
                                                .sequence_capacity = cache_capacity(kMaxModelLen, kDraftTokens)}});
        },
        1024);
    const ServeLimits limits{.model = "fixture", .vocab_size = models.target.config().vocab_size, .context = kMaxModelLen};
    std::atomic<int> bound{0};
    server = std::thread([this, limits, &bound] {
      serve_completions(*loop, reporter, *models.tokenizer, limits, {"127.0.0.1", 0}, ConnectionLimits{}, stop, [&bound](int p) { bound = p; });
    });
    while (bound.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    port = bound.load();
  }
  ~Setup() {
    stop = true;
    server.join();
  }
};

Setup& setup() {
  static Setup instance;
  return instance;
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())))];
}

// One pass of the bench through the server with `clients` requests in flight.
struct LoadPass {
  double seconds = 0.0;
  int64_t requests = 0, tokens = 0, reconnects = 0;
  std::vector<double> latencies;
  std::string error;
};

LoadPass drive_serve(const Setup& s, int64_t clients) {
  const auto dialect = make_vllm_dialect();
  LoadPass pass;
  std::atomic<size_t> next{0};
  std::mutex mutex;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int64_t c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      HttpClient client({.host = "127.0.0.1", .port = s.port}, HttpLimits{});
      for (size_t i = next++; i < s.prompts.size(); i = next++) {
        CompletionRequest request{.model = "fixture", .prompt_ids = s.prompts[i], .max_new_tokens = kMaxNewTokens};
        const auto sent = Clock::now();
        HttpResponse response = client.post_json(dialect->path(), dialect->request_body(request));
        int64_t reconnects = 0;
        for (; response.status == 0 && reconnects < 3; ++reconnects)  // as collect does
          response = client.post_json(dialect->path(), dialect->request_body(request));
        const double latency = std::chrono::duration<double>(Clock::now() - sent).count();
        const std::lock_guard lock(mutex);
        pass.reconnects += reconnects;
        if (response.status != 200) {
          pass.error = "HTTP " + std::to_string(response.status) + " " + response.error + response.body;
          return;
        }
        pass.latencies.push_back(latency);
        pass.tokens += static_cast<int64_t>(dialect->parse_response(response.body).token_ids->size());
        ++pass.requests;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  pass.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return pass;
}

// Tokens per second of one offline EXSPEC pass over the same prompts.
double offline_tokens_per_second(const Setup& s) {
  std::vector<SequenceRequest> requests;
  for (size_t i = 0; i < s.prompts.size(); ++i) requests.push_back({static_cast<int64_t>(i), s.prompts[i]});
  DecodeOptions decode;
  decode.draft_tokens = kDraftTokens;
  decode.max_new_tokens = kMaxNewTokens;
  decode.eos_ids = s.models.target.config().eos_token_ids;
  ModelDrafter drafter(*s.models.draft_or_null());
  const auto start = Clock::now();
  int64_t tokens = 0;
  for (const SequenceResult& result :
       exspec_generate(s.models.target, drafter, requests, decode, {.batch_size = kBatchSize, .window = kWindow}))
    tokens += static_cast<int64_t>(result.tokens.size());
  return static_cast<double>(tokens) / std::chrono::duration<double>(Clock::now() - start).count();
}

void BM_Serve(benchmark::State& state) {
  const Setup& s = setup();
  LoadPass total;
  for (auto _ : state) {
    LoadPass pass = drive_serve(s, state.range(0));
    if (!pass.error.empty()) return state.SkipWithError(pass.error.c_str());
    total.seconds += pass.seconds;
    total.requests += pass.requests;
    total.tokens += pass.tokens;
    total.reconnects += pass.reconnects;
    total.latencies.insert(total.latencies.end(), pass.latencies.begin(), pass.latencies.end());
  }
  state.counters["requests_per_s"] = static_cast<double>(total.requests) / total.seconds;
  state.counters["tokens_per_s"] = static_cast<double>(total.tokens) / total.seconds;
  state.counters["p50_ms"] = 1e3 * percentile(total.latencies, 0.50);
  state.counters["p99_ms"] = 1e3 * percentile(total.latencies, 0.99);
  state.counters["reconnects"] = static_cast<double>(total.reconnects);
}

// 64 clients connect at the same moment, each sends one request and takes no retry: every
// connection must be accepted and answered.
void BM_Burst(benchmark::State& state) {
  const Setup& s = setup();
  const auto dialect = make_vllm_dialect();
  constexpr int64_t kClients = 64;
  std::vector<double> latencies;
  int64_t failed = 0;
  std::string first_failure;
  for (auto _ : state) {
    std::mutex mutex;
    std::latch start(kClients);
    std::vector<std::thread> threads;
    for (int64_t c = 0; c < kClients; ++c) {
      threads.emplace_back([&, c] {
        HttpClient client({.host = "127.0.0.1", .port = s.port}, HttpLimits{});
        CompletionRequest request{.model = "fixture", .prompt_ids = s.prompts[static_cast<size_t>(c) % s.prompts.size()],
                                  .max_new_tokens = kMaxNewTokens};
        start.arrive_and_wait();
        const auto sent = Clock::now();
        const HttpResponse response = client.post_json(dialect->path(), dialect->request_body(request));
        const double latency = std::chrono::duration<double>(Clock::now() - sent).count();
        const std::lock_guard lock(mutex);
        if (response.status == 200) {
          latencies.push_back(latency);
        } else {
          ++failed;
          if (first_failure.empty()) first_failure = "HTTP " + std::to_string(response.status) + " " + response.error;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  if (latencies.empty()) return state.SkipWithError(first_failure.c_str());
  state.counters["answered"] = static_cast<double>(latencies.size());
  state.counters["failed"] = static_cast<double>(failed);
  state.counters["p50_ms"] = 1e3 * percentile(latencies, 0.50);
  state.counters["p90_ms"] = 1e3 * percentile(latencies, 0.90);
  state.counters["p99_ms"] = 1e3 * percentile(latencies, 0.99);
  state.counters["max_ms"] = 1e3 * percentile(latencies, 1.0);
}

// Serve at 16 clients and offline EXSPEC, alternating pass by pass so that the machine's other
// load falls on both alike; the ratio is the median of the pairs'.
void BM_Serve16AgainstOffline(benchmark::State& state) {
  const Setup& s = setup();
  std::vector<double> serve, offline, ratios;
  for (auto _ : state) {
    for (int pair = 0; pair < 4; ++pair) {
      offline.push_back(offline_tokens_per_second(s));
      const LoadPass pass = drive_serve(s, 16);
      if (!pass.error.empty()) return state.SkipWithError(pass.error.c_str());
      serve.push_back(static_cast<double>(pass.tokens) / pass.seconds);
      ratios.push_back(serve.back() / offline.back());
    }
  }
  state.counters["serve_tokens_per_s"] = percentile(serve, 0.5);
  state.counters["offline_tokens_per_s"] = percentile(offline, 0.5);
  state.counters["ratio_median"] = percentile(ratios, 0.5);
  state.counters["ratio_min"] = percentile(ratios, 0.0);
  state.counters["ratio_max"] = percentile(ratios, 1.0);
}

BENCHMARK(BM_Serve)->ArgName("clients")->Arg(1)->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Burst)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Serve16AgainstOffline)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace specgate::cli

int main(int argc, char** argv) {
  specgate::keep_freed_memory_for_reuse();
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--fixtures=", 11) == 0) {
      specgate::cli::fixtures_dir = argv[i] + 11;
    } else if (std::strncmp(argv[i], "--bench=", 8) == 0) {
      specgate::cli::bench_file = argv[i] + 8;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
