#include "impl/checkpoint/model_io.h"

#include <fstream>
#include <optional>
#include <set>
#include <system_error>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "impl/checkpoint/checkpoint_files.h"
#include "impl/checkpoint/safetensors.h"
#include "impl/common/dtype.h"
#include "impl/common/error.h"
#include "impl/common/huge_page_arena.h"

namespace specgate {
namespace {

std::string shape_string(at::IntArrayRef shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Tensors some checkpoints carry that the model recomputes.
bool is_ignorable(const std::string& name, const ModelConfig& config) {
  return name.ends_with("rotary_emb.inv_freq") || (config.tie_word_embeddings && name == "lm_head.weight");
}

}  // namespace

Transformer load_transformer(const std::filesystem::path& dir, at::ScalarType dtype, at::Device device) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    if (!std::filesystem::exists(dir, error)) throw InputError(dir.string() + ": no such checkpoint folder");
    if (dir.extension() == ".gguf")
      throw InputError(dir.string() + ": a GGUF file; a checkpoint is a Hugging Face folder (config.json, *.safetensors, "
                                      "tokenizer.json): transformers writes one with from_pretrained(folder, gguf_file=...) "
                                      "then save_pretrained");
    throw InputError(dir.string() + ": a file; a checkpoint is a Hugging Face folder (config.json, *.safetensors, tokenizer.json)");
  }
  ModelConfig config = read_model_config(dir / "config.json");
  config.eos_token_ids = read_eos_token_ids(dir, config);
  const CheckpointFiles files = CheckpointFiles::open(dir);
  // The tensors' names are known before anything is allocated: layers that config.json asks for
  // and the checkpoint lacks are refused before their slots are made.
  const std::string last_layer = "model.layers." + std::to_string(config.num_layers - 1) + ".input_layernorm.weight";
  if (!files.contains(last_layer))
    throw InputError((dir / "config.json").string() + ": field 'num_hidden_layers': " + std::to_string(config.num_layers) +
                     " layers, but the checkpoint has no tensor '" + last_layer + "'");
  const auto options = at::TensorOptions().dtype(dtype).device(device);

  ModelWeights weights;
  // On the CPU every weight lives in one arena of huge pages: a decode step reads them all.
  std::optional<HugePageArena> arena;
  if (device.is_cpu()) {
    int64_t bytes = 0;
    for (const WeightSlot& slot : weight_slots(config, weights))
      bytes += HugePageArena::footprint(c10::multiply_integers(slot.shape) * static_cast<int64_t>(c10::elementSize(dtype)));
    arena.emplace(bytes);
  }
  std::set<std::string> expected;
  for (WeightSlot& slot : weight_slots(config, weights)) {
    expected.insert(slot.name);
    if (!files.contains(slot.name))
      throw InputError(dir.string() + ": tensor '" + slot.name + "' is missing from the checkpoint");
    const at::Tensor stored = files.tensor(slot.name);
    const std::string where = files.file_of(slot.name).string() + ": tensor '" + slot.name + "'";
    if (!at::isFloatingType(stored.scalar_type()))
      throw InputError(where + ": expected a floating-point dtype, got " + std::string(c10::toString(stored.scalar_type())));
    if (stored.sizes() != at::IntArrayRef(slot.shape))
      throw InputError(where + ": expected shape " + shape_string(slot.shape) + " from config.json, got " +
                       shape_string(stored.sizes()));
    *slot.tensor = arena ? arena->allocate(slot.shape, dtype).copy_(stored)
                         : stored.to(options, /*non_blocking=*/false, /*copy=*/true);
  }
  for (const std::string& name : files.names()) {
    if (!expected.contains(name) && !is_ignorable(name, config))
      throw InputError(files.file_of(name).string() + ": tensor '" + name + "' is not part of a " + config.model_type +
                       " model with this config.json");
  }
  if (config.tie_word_embeddings) weights.lm_head = weights.embed_tokens;
  return Transformer(std::move(config), std::move(weights));
}

void save_transformer(const std::filesystem::path& dir, const Transformer& model) {
  std::filesystem::create_directories(dir);
  ModelConfig config = model.config();
  ModelWeights weights = model.weights();
  config.torch_dtype = dtype_name(weights.embed_tokens.scalar_type());
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const WeightSlot& slot : weight_slots(config, weights)) named.emplace_back(slot.name, *slot.tensor);
  safetensors::write(dir / "model.safetensors", named, {{"format", "pt"}});

  std::ofstream out(dir / "config.json");
  out << to_json(config).dump(2) << "\n";
  if (!out) throw InputError((dir / "config.json").string() + ": cannot write");
}

}  // namespace specgate
