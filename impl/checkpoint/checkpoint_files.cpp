#include "impl/checkpoint/checkpoint_files.h"

#include <array>
#include <span>

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
  const JsonFile file = read_json_file(index_path);
  const nlohmann::json& index = file.value;
  if (!index.is_object()) throw InputError(file.name + ": expected a JSON object");
  const auto fail = [&](std::span<const std::string> path, const std::string& what) {
    throw InputError(field_message(file.name, file.text, path, "weight_map", what));
  };
  const auto weight_map = index.find("weight_map");
  if (weight_map == index.end()) fail(std::array<std::string, 1>{"weight_map"}, "missing");
  if (!weight_map->is_object()) fail(std::array<std::string, 1>{"weight_map"}, "expected an object of tensor name to file name");

  std::map<std::string, std::string> shard_of;
  for (const auto& [name, shard] : weight_map->items()) {
    const std::array<std::string, 2> path{"weight_map", name};
    if (!shard.is_string()) fail(path, "tensor '" + name + "': expected a file name");
    const std::string shard_file = shard.get<std::string>();
    if (shard_file.empty() || shard_file == "." || shard_file == ".." || std::filesystem::path(shard_file).has_parent_path())
      fail(path, "tensor '" + name + "': '" + shard_file + "' is not a file name in the folder");
    shard_of.emplace(name, shard_file);
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
