#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace specgate::safetensors {

// A safetensors file (8-byte little-endian header length, JSON header, data section) mapped
// read-only into memory. Opening validates the whole header, so truncated or corrupt files
// fail there with an InputError naming the file and the tensor. Cheap to copy.
class File {
 public:
  static File open(const std::filesystem::path& path);

  const std::filesystem::path& path() const;
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const;

  // A CPU tensor over the mapped bytes (no copy when aligned for its dtype). The memory is
  // read-only: copy before writing into it. The mapping lives as long as the tensor does.
  at::Tensor tensor(const std::string& name) const;

 private:
  struct Mapping;
  struct Entry {
    at::ScalarType dtype;
    std::vector<int64_t> shape;
    size_t begin;  // offset in the data section
    size_t end;
  };
  File(std::shared_ptr<const Mapping> mapping, std::map<std::string, Entry> entries,
       std::map<std::string, std::string> metadata);

  std::shared_ptr<const Mapping> mapping_;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (any device or layout; stored contiguous, little-endian) in the given
// order through a temporary file renamed into place. Throws InputError on duplicate names,
// unsupported dtypes or I/O failure.
void write(const std::filesystem::path& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
           const std::map<std::string, std::string>& metadata = {});

}  // namespace specgate::safetensors
