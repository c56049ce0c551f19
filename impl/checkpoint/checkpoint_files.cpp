#include "impl/checkpoint/checkpoint_files.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate {
namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

}  // namespace

CheckpointFiles CheckpointFiles::open(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw InputError(dir.string() + ": not a checkpoint folder (no such directory)");
  CheckpointFiles files;
  const std::filesystem::path index_path = dir / kIndexFile;
  if (std::filesystem::exists(dir / kSingleFile) && !std::filesystem::exists(index_path)) {
    const safetensors::File file = safetensors::File::open(dir / kSingleFile);
    for (const std::string& name : file.names()) files.shard_of_.emplace(name, file);
    return files;
  }
  if (!std::filesystem::exists(index_path))
    throw InputError(dir.string() + ": neither " + kSingleFile + " nor " + kIndexFile + " is present");

  std::ifstream in(index_path);
  const nlohmann::json index = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object()) throw InputError(index_path.string() + ": not a JSON object");
  if (!index.contains("weight_map") || !index["weight_map"].is_object())
    throw InputError(index_path.string() + ": field 'weight_map': missing or not an object");

  std::map<std::string, safetensors::File> shards;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      throw InputError(index_path.string() + ": field 'weight_map." + name + "': expected a file name");
    const std::string shard_name = shard.get<std::string>();
    if (!shards.contains(shard_name)) {
      if (!std::filesystem::exists(dir / shard_name))
        throw InputError(index_path.string() + ": tensor '" + name + "': shard " + shard_name + " is missing");
      shards.emplace(shard_name, safetensors::File::open(dir / shard_name));
    }
    const safetensors::File& file = shards.at(shard_name);
    if (!file.contains(name))
      throw InputError(file.path().string() + ": tensor '" + name + "' is listed in " + kIndexFile + " but absent");
    files.shard_of_.emplace(name, file);
  }
  for (const auto& [shard_name, file] : shards) {
    for (const std::string& name : file.names()) {
      if (!files.contains(name))
        throw InputError(file.path().string() + ": tensor '" + name + "' is not listed in " + kIndexFile);
      if (files.file_of(name) != file.path())
        throw InputError(file.path().string() + ": tensor '" + name + "' is also in " + files.file_of(name).string());
    }
  }
  return files;
}

bool CheckpointFiles::contains(const std::string& name) const { return shard_of_.contains(name); }

std::vector<std::string> CheckpointFiles::names() const {
  std::vector<std::string> names;
  for (const auto& [name, file] : shard_of_) names.push_back(name);
  return names;
}

at::Tensor CheckpointFiles::tensor(const std::string& name) const {
  const auto found = shard_of_.find(name);
  if (found == shard_of_.end()) throw InputError("checkpoint: tensor '" + name + "' is missing");
  return found->second.tensor(name);
}

const std::filesystem::path& CheckpointFiles::file_of(const std::string& name) const {
  static const std::filesystem::path kNowhere;
  const auto found = shard_of_.find(name);
  return found == shard_of_.end() ? kNowhere : found->second.path();
}

}  // namespace specgate
