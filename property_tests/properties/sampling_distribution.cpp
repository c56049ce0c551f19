#include "property_tests/properties/sampling_distribution.h"

#include <algorithm>
#include <functional>
#include <memory>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "impl/decoding/decoders.h"
#include "impl/decoding/model_drafter.h"
#include "impl/decoding/ngram_drafter.h"
#include "impl/decoding/eqspec.h"
#include "property_tests/properties/case_models.h"

namespace specgate::props {
namespace {

const auto kLong = at::TensorOptions().dtype(at::kLong);

at::Tensor next_token_distribution(const Transformer& model, const std::vector<int64_t>& context,
                                   const SamplingParams& sampling) {
  const int64_t n = static_cast<int64_t>(context.size());
  const at::Tensor hidden = model.forward(at::tensor(context, kLong).unsqueeze(0), at::arange(n, kLong).unsqueeze(0),
                                          at::ones({1, n}, kLong.dtype(at::kBool)), nullptr);
  return sampling_distribution(model.logits(hidden[0][n - 1]), sampling).contiguous();
}

std::vector<SequenceResult> decode(const DistributionScenario& s, const Transformer& target, const Transformer* draft,
                                   std::span<const SequenceRequest> requests, const DecodeOptions& options) {
  if (!s.tree.empty()) {
    const std::unique_ptr<TreeDrafter> drafter = make_model_tree_drafter(*draft, TreeShape(s.tree));
    return tree_generate(target, *drafter, requests, options);
  }
  std::unique_ptr<Drafter> drafter;
  if (s.draft == DraftKind::kNgram) {
    drafter = std::make_unique<NgramDrafter>(NgramOptions{.min_n = 1, .max_n = 2});
  } else {
    drafter = std::make_unique<ModelDrafter>(*draft);
  }
  const DecoderSettings settings{.decode = options, .batch_size = s.batch_size, .exspec = {.window = s.window},
                                 .sequence_capacity = cache_capacity(requests, options)};
  return decode_all(*make_decoder(s.decoder, target, drafter.get(), settings), requests);
}

}  // namespace

std::map<Outcome, double> exact_output_distribution(const Transformer& target, const std::vector<int64_t>& prompt,
                                                    int64_t max_new_tokens, const SamplingParams& sampling,
                                                    const std::vector<int64_t>& eos_ids) {
  std::map<Outcome, double> cells;
  std::vector<int64_t> context = prompt;
  Outcome output;
  std::function<void(double)> extend = [&](double probability) {
    const bool ended = !output.empty() && std::find(eos_ids.begin(), eos_ids.end(), output.back()) != eos_ids.end();
    if (ended || static_cast<int64_t>(output.size()) == max_new_tokens) {
      cells[output] += probability;
      return;
    }
    const at::Tensor p = next_token_distribution(target, context, sampling);
    const double* values = p.data_ptr<double>();
    for (int64_t token = 0; token < p.numel(); ++token) {
      if (values[token] <= 0.0) continue;
      context.push_back(token);
      output.push_back(token);
      extend(probability * values[token]);
      context.pop_back();
      output.pop_back();
    }
  };
  extend(1.0);
  return cells;
}

DistributionTestResult distribution_test(const DistributionScenario& s, const FaultSet& faults, double alpha) {
  const Transformer target = build_target(s.target);
  const std::optional<Transformer> draft = build_draft(s.target, target, s.draft, s.draft_seed, s.draft_noise);
  DecodeOptions options;
  options.draft_tokens = s.k;
  options.max_new_tokens = s.max_new_tokens;
  options.sampling = s.sampling;
  options.eos_ids = s.eos_ids;
  options.faults = faults;

  const int64_t prompts = static_cast<int64_t>(s.prompts.size());
  std::vector<SequenceRequest> requests;
  for (int64_t j = 0; j < s.samples_per_prompt * prompts; ++j) requests.push_back({j, s.prompts[j % prompts]});
  // EQSPEC decodes one batch per call; EXSPEC streams many sequences through its window.
  const int64_t chunk = s.decoder == DecoderKind::kEqspec ? s.batch_size : 32 * s.window;
  std::vector<std::map<Outcome, int64_t>> counts(prompts);
  for (int64_t first = 0; first < static_cast<int64_t>(requests.size()); first += chunk) {
    const int64_t size = std::min<int64_t>(chunk, static_cast<int64_t>(requests.size()) - first);
    const std::span<const SequenceRequest> batch(requests.data() + first, size);
    for (const SequenceResult& result : decode(s, target, draft ? &*draft : nullptr, batch, options))
      ++counts[result.sequence_index % prompts][result.tokens];
  }

  std::vector<GoodnessOfFit> parts;
  for (int64_t p = 0; p < prompts; ++p) {
    parts.push_back(pearson_test(exact_output_distribution(target, s.prompts[p], s.max_new_tokens, s.sampling, s.eos_ids),
                                 counts[p]));
  }
  DistributionTestResult verdict;
  verdict.fit = combine(parts);
  verdict.rejected = verdict.fit.p_value < alpha;
  return verdict;
}

std::vector<Fault> sampling_faults() {
  return {Fault::kBonusFromDraft,      Fault::kResidualNotNormalised, Fault::kAlwaysAccept,
          Fault::kRawDraftDistribution, Fault::kGreedyVerification,    Fault::kDraftFilterSkipped,
          Fault::kStaleDraftDistribution, Fault::kWarpersBeforeTemperature, Fault::kTreeSiblingNotRenormalised,
          Fault::kTreeRejectedSiblingKept};
}

std::vector<DistributionScenario> distribution_panel() {
  auto model = [](std::string family, int64_t layers, int64_t vocab, uint64_t seed) {
    ModelSpec m;
    m.family = std::move(family);
    m.layers = layers;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 4;
    m.hidden = 16;
    m.vocab = vocab;
    m.qk_norm = m.family == "qwen3";
    m.qkv_bias = m.family == "qwen2";
    if (m.family == "mistral") m.sliding_window = 4;
    m.seed = seed;
    return m;
  };
  std::vector<DistributionScenario> panel;
  {
    DistributionScenario& s = panel.emplace_back();
    s.name = "eqspec-top-k";
    s.target = model("qwen3", 2, 8, 11);
    s.draft_seed = 12;
    s.prompts = {{3, 1, 4}, {1, 5, 2, 6, 5, 3}};
    s.k = 2;
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 0.8, .top_k = 3, .seed = 101};
    s.batch_size = 32;
    s.samples_per_prompt = 2000;
  }
  {
    DistributionScenario& s = panel.emplace_back();
    s.name = "eqspec-top-p-eos";
    s.target = model("llama", 1, 6, 21);
    s.draft = DraftKind::kNearTarget;
    s.draft_seed = 22;
    s.draft_noise = 0.5;
    s.prompts = {{2, 3}, {5, 4, 1, 0, 2}, {1, 1, 2, 3, 5, 0, 4, 3, 2}};
    s.k = 3;
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 1.2, .top_p = 0.8, .seed = 102};
    s.eos_ids = {1};
    s.batch_size = 24;
    s.samples_per_prompt = 1500;
  }
  {
    DistributionScenario& s = panel.emplace_back();
    s.name = "exspec-top-k";
    s.target = model("qwen2", 2, 8, 31);
    s.draft_seed = 32;
    s.prompts = {{7, 0, 3, 3}, {2, 6, 1, 4, 0, 5, 7}};
    s.k = 2;
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 0.7, .top_k = 4, .seed = 103};
    s.decoder = DecoderKind::kExspec;
    s.batch_size = 16;
    s.window = 32;
    s.samples_per_prompt = 2000;
  }
  {
    DistributionScenario& s = panel.emplace_back();
    s.name = "exspec-temperature";
    s.target = model("mistral", 2, 5, 41);
    s.draft_seed = 42;
    s.prompts = {{4}, {0, 2, 1, 3, 4}};
    s.k = 1;
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 1.0, .seed = 104};
    s.decoder = DecoderKind::kExspec;
    s.batch_size = 12;
    s.window = 20;
    s.samples_per_prompt = 2000;
  }
  {
    DistributionScenario& s = panel.emplace_back();
    s.name = "eqspec-min-p";
    s.target = model("qwen3", 2, 8, 51);
    s.draft = DraftKind::kNearTarget;
    s.draft_seed = 52;
    s.draft_noise = 0.5;
    s.prompts = {{6, 2, 5}, {0, 3, 7, 1}};
    s.k = 2;
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 1.3, .top_p = 0.95, .min_p = 0.2, .seed = 105};
    s.batch_size = 24;
    s.samples_per_prompt = 1500;
  }
  {
    // Prompt lookup: a point-mass q, ragged rows (prompts that repeat themselves and prompts
    // that do not), each draft kept with probability p(d).
    DistributionScenario& s = panel.emplace_back();
    s.name = "eqspec-ngram";
    s.target = model("llama", 2, 6, 61);
    s.draft = DraftKind::kNgram;
    s.prompts = {{3, 1, 3, 1, 3}, {0, 2, 4}, {5, 5, 1, 5}};
    s.k = 3;
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 0.9, .top_k = 4, .seed = 106};
    s.batch_size = 24;
    s.samples_per_prompt = 1500;
  }
  {
    DistributionScenario& s = panel.emplace_back();
    s.name = "exspec-ngram";
    s.target = model("qwen3", 2, 5, 71);
    s.draft = DraftKind::kNgram;
    s.prompts = {{2, 4, 2, 4}, {1, 3, 0, 1}};
    s.k = 2;
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 1.1, .top_p = 0.9, .seed = 107};
    s.decoder = DecoderKind::kExspec;
    s.batch_size = 12;
    s.window = 24;
    s.samples_per_prompt = 2000;
  }
  {
    // Siblings at the root and below, from a draft near the target: rejections of a first
    // sibling and acceptances of the next are both common.
    DistributionScenario& s = panel.emplace_back();
    s.name = "tree-top-k";
    s.target = model("qwen3", 2, 8, 81);
    s.draft = DraftKind::kNearTarget;
    s.draft_seed = 82;
    s.draft_noise = 0.7;
    s.prompts = {{4, 1, 6}, {2, 0, 5, 7, 3}};
    s.tree = {-1, -1, -1, 0, 0, 1, 3};
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 0.9, .top_k = 4, .seed = 108};
    s.batch_size = 24;
    s.samples_per_prompt = 2000;
  }
  {
    // A wide first level over a small vocabulary under top-p, with EOS: every candidate of a
    // row can be rejected, and the bonus drawn from what is left.
    DistributionScenario& s = panel.emplace_back();
    s.name = "tree-top-p-eos";
    s.target = model("llama", 2, 6, 91);
    s.draft_seed = 92;
    s.prompts = {{3, 5}, {0, 4, 2, 2, 1}};
    s.tree = {-1, -1, -1, 1};
    s.max_new_tokens = 3;
    s.sampling = {.temperature = 1.2, .top_p = 0.9, .seed = 109};
    s.eos_ids = {2};
    s.batch_size = 24;
    s.samples_per_prompt = 2000;
  }
  return panel;
}

std::vector<DistributionScenario> simplifications(const DistributionScenario& scenario) {
  std::vector<DistributionScenario> out;
  if (scenario.batch_size > 2) {
    DistributionScenario s = scenario;
    s.batch_size = s.window = 2;
    out.push_back(s);
  }
  if (scenario.k > 1) {
    DistributionScenario s = scenario;
    s.k = 1;
    out.push_back(s);
  }
  if (scenario.prompts.size() > 1) {
    DistributionScenario s = scenario;
    s.prompts.resize(1);
    out.push_back(s);
  }
  if (scenario.max_new_tokens > 2) {
    DistributionScenario s = scenario;
    s.max_new_tokens = 2;
    out.push_back(s);
  }
  return out;
}

nlohmann::json summary(const DistributionScenario& s) {
  std::vector<int64_t> lengths;
  for (const auto& prompt : s.prompts) lengths.push_back(static_cast<int64_t>(prompt.size()));
  nlohmann::json out = {{"scenario", s.name},
                        {"decoder", decoder_name(s.decoder)},
                        {"batch_size", s.batch_size},
                        {"prompt_lengths", lengths},
                        {"k", s.k},
                        {"max_new_tokens", s.max_new_tokens},
                        {"vocab", s.target.vocab},
                        {"sampling",
                         {{"temperature", s.sampling.temperature},
                          {"top_k", s.sampling.top_k},
                          {"top_p", s.sampling.top_p},
                          {"min_p", s.sampling.min_p},
                          {"seed", s.sampling.seed}}},
                        {"draft", draft_kind_name(s.draft)},
                        {"samples_per_prompt", s.samples_per_prompt}};
  if (s.decoder == DecoderKind::kExspec) out["window"] = s.window;
  if (!s.tree.empty()) out["tree"] = s.tree;
  if (!s.eos_ids.empty()) out["eos_ids"] = s.eos_ids;
  return out;
}

}  // namespace specgate::props
