#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/checkpoint/safetensors.h"

namespace specgate {

// The safetensors tensors of a Hugging Face checkpoint folder: `model.safetensors` when present
// (as transformers prefers it), else the shards that `model.safetensors.index.json` lists
// ({"weight_map": {tensor: file}}). Every inconsistency (a missing shard, a tensor absent from
// its shard or missing from the index, a tensor in two shards) fails at open().
class CheckpointFiles {
 public:
  static CheckpointFiles open(const std::filesystem::path& dir);

  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted
  // tensor() and file_of() throw InputError naming the folder for a name it does not hold.
  at::Tensor tensor(const std::string& name) const;
  // The file a tensor lives in, for messages.
  const std::filesystem::path& file_of(const std::string& name) const;

 private:
  explicit CheckpointFiles(std::filesystem::path dir);
  const safetensors::File& file(const std::string& name) const;

  std::filesystem::path dir_;
  std::map<std::string, safetensors::File> file_of_tensor_;
};

}  // namespace specgate
