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

// One tensor's entry in a safetensors header; the offsets are relative to the data section.
struct TensorInfo {
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
};

// A safetensors file (8-byte little-endian header length, JSON header, data section) mapped
// read-only into memory. Opening validates the whole header, so truncated or corrupt files
// fail there with an InputError naming the file and the tensor. Cheap to copy; the mapping
// lives as long as any copy or any tensor returned by tensor().
class File {
 public:
  static File open(const std::filesystem::path& path);

  const std::filesystem::path& path() const;
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const;

  // dtype(), shape() and tensor() throw InputError for a name the file does not hold.
  at::ScalarType dtype(const std::string& name) const;
  std::vector<int64_t> shape(const std::string& name) const;
  // A CPU tensor viewing the mapped bytes, or a copy of them when they are not aligned for
  // the dtype. The mapping is read-only: writing into the tensor kills the process, so
  // clone() it before modifying it in place.
  at::Tensor tensor(const std::string& name) const;

 private:
  struct Contents;  // the mapped bytes and the parsed header

  explicit File(std::shared_ptr<const Contents> contents);
  const TensorInfo& info(const std::string& name) const;

  std::shared_ptr<const Contents> contents_;
};

// Writes `tensors` in the given order (any device or layout; stored contiguous, little-endian)
// with the header padded with spaces to a multiple of 8 bytes, as the reference implementation
// does. Goes through a temporary file renamed into place, so a crash leaves no partial file at
// `path`. Throws InputError on duplicate or reserved names, undefined tensors, dtypes
// safetensors cannot hold, and I/O failures.
void write(const std::filesystem::path& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
           const std::map<std::string, std::string>& metadata = {});

}  // namespace specgate::safetensors
