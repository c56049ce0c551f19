#include "property_tests/properties/case_models.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "impl/model/weights.h"

namespace specgate::props {
namespace {

const auto kFloat64 = at::TensorOptions().dtype(at::kDouble);

ModelWeights perturbed(ModelWeights weights, const ModelConfig& config, uint64_t seed, double noise) {
  ModelWeights copy;
  std::vector<WeightSlot> from = weight_slots(config, weights), to = weight_slots(config, copy);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (size_t i = 0; i < from.size(); ++i) {
    const at::Tensor& weight = *from[i].tensor;
    const double scale = weight.numel() > 1 ? weight.std().item<double>() : 1.0;
    *to[i].tensor = weight + at::randn(weight.sizes(), generator, kFloat64) * (noise * scale);
  }
  if (config.tie_word_embeddings) copy.lm_head = copy.embed_tokens;
  return copy;
}

}  // namespace

Transformer build_target(const ModelSpec& spec) {
  const ModelConfig config = spec.config();
  return Transformer(config, random_weights(config, kFloat64, spec.seed));
}

std::optional<Transformer> build_draft(const ModelSpec& target_spec, const Transformer& target, DraftKind kind,
                                       uint64_t seed, double noise) {
  switch (kind) {
    case DraftKind::kScriptOnly:
    case DraftKind::kNgram:
      return std::nullopt;
    case DraftKind::kNearTarget:
      return Transformer(target.config(), perturbed(target.weights(), target.config(), seed, noise));
    case DraftKind::kScriptedModel:
    case DraftKind::kIndependent: {
      ModelSpec spec = target_spec;
      spec.layers = 1;
      spec.seed = seed;
      return build_target(spec);
    }
  }
  return std::nullopt;
}

}  // namespace specgate::props
