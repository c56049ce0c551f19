// Prints the tokens EQSPEC and EXSPEC generate, greedy and sampled, on fixed float64 cases.
// Built twice, against the decoder library with and without seeded faults: ctest compares the
// two outputs, which must be identical.
#include <cstdio>
#include <vector>

#include <ATen/ATen.h>

#include "fixtures/models/tiny_configs.h"
#include "impl/decoding/eqspec.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/model_drafter.h"
#include "impl/model/weights.h"

namespace specgate {
namespace {

void print(const char* name, const std::vector<SequenceResult>& results) {
  for (const SequenceResult& result : results) {
    std::printf("%s %lld:", name, static_cast<long long>(result.sequence_index));
    for (int64_t token : result.tokens) std::printf(" %lld", static_cast<long long>(token));
    std::printf("\n");
  }
}

int run() {
  const auto float64 = at::TensorOptions().dtype(at::kDouble);
  ModelConfig draft_config = tiny_config("qwen3");
  draft_config.num_layers = 1;
  const Transformer target(tiny_config("qwen3"), random_weights(tiny_config("qwen3"), float64, 21));
  const Transformer draft(draft_config, random_weights(draft_config, float64, 22));
  std::vector<SequenceRequest> requests;
  for (int64_t i = 0; i < 7; ++i) {
    SequenceRequest& request = requests.emplace_back();
    request.sequence_index = i;
    for (int64_t j = 0; j <= (i * 5) % 11; ++j) request.prompt.push_back((i * 31 + j * 17) % 259);
  }
  ModelDrafter drafter(draft);
  DecodeOptions options;
  options.draft_tokens = 3;
  options.max_new_tokens = 10;
  for (const double temperature : {0.0, 0.9}) {
    options.sampling = {.temperature = temperature, .top_k = 20, .top_p = 0.95, .seed = 5};
    const bool greedy = temperature == 0.0;
    print(greedy ? "eqspec-greedy" : "eqspec-sampled", eqspec_generate(target, drafter, requests, options));
    print(greedy ? "exspec-greedy" : "exspec-sampled",
          exspec_generate(target, drafter, requests, options, {.batch_size = 3, .window = 5}));
  }
  return 0;
}

}  // namespace
}  // namespace specgate

int main() { return specgate::run(); }
