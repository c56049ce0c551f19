#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/checkpoint/safetensors.h"

namespace specgate {

// The tensors of a Hugging Face checkpoint folder: `model.safetensors`, or the shards that
// `model.safetensors.index.json` lists ({"weight_map": {tensor: file}}). Every inconsistency
// (missing shard, tensor absent from its shard, a tensor in two places) fails at open().
class CheckpointFiles {
 public:
  static CheckpointFiles open(const std::filesystem::path& dir);

  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted
  at::Tensor tensor(const std::string& name) const;
  // The file a tensor lives in, for messages.
  const std::filesystem::path& file_of(const std::string& name) const;

 private:
  std::map<std::string, safetensors::File> shard_of_;
};

}  // namespace specgate
