#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specgate::safetensors {

// The 8-byte little-endian length that starts a safetensors file, before its JSON header.
constexpr uint64_t kLengthBytes = 8;
constexpr const char* kMetadataKey = "__metadata__";

// One tensor's entry in a safetensors header; the offsets are relative to the data section.
struct HeaderEntry {
  std::string dtype;  // the format's code: F32, BF16, I64, ...
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct Header {
  std::map<std::string, HeaderEntry> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // where the data section starts in the file
};

// Bytes per element of a dtype code; nullopt for a code the format does not define.
std::optional<size_t> element_size(std::string_view code);

// Parses and checks the header of the safetensors file whose bytes are `file`: the length, the
// JSON, every tensor's dtype, shape and offsets against the data section, and overlaps. Throws
// InputError naming `path` and the tensor or field. Metadata that is not a string is ignored
// with a warning (loading a model reads none of it).
Header parse_header(const std::filesystem::path& path, std::span<const uint8_t> file);

}  // namespace specgate::safetensors
