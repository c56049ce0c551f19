#include "impl/checkpoint/checkpoint_files.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_value.h"

namespace specgate {
namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// The index's weight_map: tensor name -> shard file name, checked to be a plain file name so
// that shards stay inside the folder.
std::map<std::string, std::string> read_weight_map(const std::filesystem::path& index_path) {
  const std::string where = index_path.string() + ": ";
  std::ifstream in(index_path);
  if (!in) throw InputError(where + "cannot open");
  JsonError error;
  const std::optional<nlohmann::json> parsed = parse_json(in, error);
  if (!parsed) throw InputError(where + "not valid JSON" + error.at());
  const nlohmann::json& index = *parsed;
  if (!index.is_object()) throw InputError(where + "expected a JSON object");
  const auto weight_map = index.find("weight_map");
  if (weight_map == index.end()) throw InputError(where + "field 'weight_map' is missing");
  if (!weight_map->is_object())
    throw InputError(where + "field 'weight_map': expected an object of tensor name to file name");

  std::map<std::string, std::string> shard_of;
  for (const auto& [name, shard] : weight_map->items()) {
    const std::string entry = where + "field 'weight_map', tensor '" + name + "': ";
    if (!shard.is_string()) throw InputError(entry + "expected a file name");
    const std::string file = shard.get<std::string>();
    if (file.empty() || file == "." || file == ".." || std::filesystem::path(file).has_parent_path())
      throw InputError(entry + "'" + file + "' is not a file name in the folder");
    shard_of.emplace(name, file);
  }
  return shard_of;
}

}  // namespace

CheckpointFiles::CheckpointFiles(std::filesystem::path dir) : dir_(std::move(dir)) {}

CheckpointFiles CheckpointFiles::open(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) throw InputError(dir.string() + ": no such checkpoint folder");
  CheckpointFiles files(dir);
  if (std::filesystem::exists(dir / kSingleFile, error)) {
    const safetensors::File file = safetensors::File::open(dir / kSingleFile);
    for (const std::string& name : file.names()) files.file_of_tensor_.emplace(name, file);
    return files;
  }
  const std::filesystem::path index_path = dir / kIndexFile;
  if (!std::filesystem::exists(index_path, error))
    throw InputError(dir.string() + ": neither " + kSingleFile + " nor " + kIndexFile + " is present");

  std::map<std::string, safetensors::File> shards;
  for (const auto& [name, shard_name] : read_weight_map(index_path)) {
    auto shard = shards.find(shard_name);
    if (shard == shards.end()) {
      if (!std::filesystem::exists(dir / shard_name, error))
        throw InputError(index_path.string() + ": tensor '" + name + "': shard " + shard_name + " does not exist");
      shard = shards.emplace(shard_name, safetensors::File::open(dir / shard_name)).first;
    }
    if (!shard->second.contains(name))
      throw InputError(shard->second.path().string() + ": tensor '" + name + "' is listed in " + kIndexFile +
                       " but absent from this file");
    files.file_of_tensor_.emplace(name, shard->second);
  }
  for (const auto& [shard_name, shard] : shards) {
    for (const std::string& name : shard.names()) {
      const auto listed = files.file_of_tensor_.find(name);
      if (listed == files.file_of_tensor_.end())
        throw InputError(shard.path().string() + ": tensor '" + name + "' is not listed in " + kIndexFile);
      if (listed->second.path() != shard.path())
        throw InputError(shard.path().string() + ": tensor '" + name + "' is also in " +
                         listed->second.path().filename().string() + ", where " + kIndexFile + " places it");
    }
  }
  return files;
}

bool CheckpointFiles::contains(const std::string& name) const { return file_of_tensor_.contains(name); }

std::vector<std::string> CheckpointFiles::names() const {
  std::vector<std::string> names;
  for (const auto& [name, file] : file_of_tensor_) names.push_back(name);
  return names;
}

const safetensors::File& CheckpointFiles::file(const std::string& name) const {
  const auto found = file_of_tensor_.find(name);
  if (found == file_of_tensor_.end())
    throw InputError(dir_.string() + ": tensor '" + name + "': not in the checkpoint");
  return found->second;
}

at::Tensor CheckpointFiles::tensor(const std::string& name) const { return file(name).tensor(name); }

const std::filesystem::path& CheckpointFiles::file_of(const std::string& name) const { return file(name).path(); }

}  // namespace specgate
