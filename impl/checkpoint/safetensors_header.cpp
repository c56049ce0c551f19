#include "impl/checkpoint/safetensors_header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/ignored_field.h"
#include "impl/common/json_value.h"

namespace specgate::safetensors {
namespace {

using nlohmann::json;

struct DtypeSize {
  std::string_view code;
  size_t bytes;
};

constexpr std::array<DtypeSize, 10> kDtypeSizes = {{
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1},
}};

// The reference implementation refuses larger headers too.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError(path.string() + ": " + what);
}

std::string tensor_label(const std::string& name) { return "tensor '" + name + "'"; }

// A JSON value as a message shows it: one short line, never a dump of nested containers.
std::string describe(const json& value) {
  if (value.is_structured()) {
    for (const json& element : value) {
      if (element.is_structured()) return std::string("a nested JSON ") + value.type_name();
    }
  }
  const std::string text = value.dump();
  return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

std::string range_text(uint64_t begin, uint64_t end) {
  std::string text = "[";
  return text.append(std::to_string(begin)).append(", ").append(std::to_string(end)).append("]");
}

uint64_t header_length(const std::filesystem::path& path, std::span<const uint8_t> file) {
  if (file.size() < kLengthBytes)
    fail(path, "header length: the file is " + std::to_string(file.size()) + " bytes, shorter than the 8-byte length");
  uint64_t length = 0;
  std::memcpy(&length, file.data(), kLengthBytes);
  if (length > file.size() - kLengthBytes)
    fail(path, "header length " + std::to_string(length) + " exceeds the file (" + std::to_string(file.size()) +
                   " bytes); the file is truncated or corrupt");
  if (length > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(length) + " exceeds the limit of " + std::to_string(kMaxHeaderBytes));
  return length;
}

// The format says string to string; loading a model reads none of it, so other values are
// ignored with a warning.
std::map<std::string, std::string> parse_metadata(const std::filesystem::path& path, const json& value) {
  std::map<std::string, std::string> metadata;
  if (!value.is_object()) {
    warn_ignored_field(path.string(), std::nullopt, kMetadataKey, "expected an object of strings, got " + describe(value));
    return metadata;
  }
  for (const auto& [key, text] : value.items()) {
    if (text.is_string()) {
      metadata.emplace(key, text.get<std::string>());
    } else {
      warn_ignored_field(path.string(), std::nullopt, kMetadataKey + ("." + key), "expected a string, got " + describe(text));
    }
  }
  return metadata;
}

HeaderEntry parse_tensor(const std::filesystem::path& path, const std::string& name, const json& value,
                         uint64_t data_bytes) {
  const std::string where = tensor_label(name) + ": ";
  if (!value.is_object()) fail(path, where + "expected an object, got " + describe(value));
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) fail(path, where + "field '" + field + "' is missing");
  }

  const json& dtype = value.at("dtype");
  const std::optional<size_t> size_of_element = dtype.is_string() ? element_size(dtype.get<std::string>()) : std::nullopt;
  if (!size_of_element) fail(path, where + "field 'dtype': unsupported dtype " + describe(dtype));
  HeaderEntry info{dtype.get<std::string>(), {}, 0, 0};

  const json& shape = value.at("shape");
  if (!shape.is_array()) fail(path, where + "field 'shape': expected a list of sizes, got " + describe(shape));
  uint64_t bytes = *size_of_element;
  for (const json& size : shape) {
    const std::optional<int64_t> checked = json_integer(size, 0);
    if (!checked) fail(path, where + "field 'shape': expected non-negative integers, got " + describe(shape));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(*checked), &bytes))
      fail(path, where + "field 'shape': " + describe(shape) + " is too large");
    info.shape.push_back(*checked);
  }

  const json& offsets = value.at("data_offsets");
  const std::optional<uint64_t> begin = offsets.is_array() && offsets.size() == 2 ? json_unsigned(offsets[0]) : std::nullopt;
  const std::optional<uint64_t> end = begin ? json_unsigned(offsets[1]) : std::nullopt;
  if (!end) fail(path, where + "field 'data_offsets': expected [begin, end], got " + describe(offsets));
  info.begin = *begin;
  info.end = *end;
  const std::string range = "data_offsets " + range_text(info.begin, info.end);
  if (info.begin > info.end) fail(path, where + range + ": begin is past end");
  if (info.end > data_bytes)
    fail(path, where + range + " exceed the file's data section (" + std::to_string(data_bytes) +
                   " bytes); the file is truncated or corrupt");
  if (info.end - info.begin != bytes)
    fail(path, where + range + " hold " + std::to_string(info.end - info.begin) + " bytes, but dtype " +
                   dtype.get<std::string>() + " and shape " + describe(shape) + " need " + std::to_string(bytes));
  return info;
}

void check_no_overlap(const std::filesystem::path& path, const std::map<std::string, HeaderEntry>& tensors) {
  std::vector<std::pair<const std::string*, const HeaderEntry*>> by_begin;
  for (const auto& [name, info] : tensors) by_begin.emplace_back(&name, &info);
  std::sort(by_begin.begin(), by_begin.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  const std::pair<const std::string*, const HeaderEntry*>* previous = nullptr;
  for (const auto& current : by_begin) {
    const HeaderEntry& info = *current.second;
    if (info.begin == info.end) continue;  // zero bytes overlap nothing
    if (previous != nullptr && info.begin < previous->second->end)
      fail(path, tensor_label(*current.first) + ": data_offsets " + range_text(info.begin, info.end) + " overlap " +
                     tensor_label(*previous->first) + " at " +
                     range_text(previous->second->begin, previous->second->end));
    previous = &current;
  }
}

}  // namespace

std::optional<size_t> element_size(std::string_view code) {
  for (const DtypeSize& known : kDtypeSizes) {
    if (code == known.code) return known.bytes;
  }
  return std::nullopt;
}

Header parse_header(const std::filesystem::path& path, std::span<const uint8_t> file) {
  const uint64_t header_bytes = header_length(path, file);
  const std::span<const uint8_t> header_span = file.subspan(kLengthBytes, header_bytes);
  const uint64_t data_bytes = file.size() - kLengthBytes - header_bytes;
  Header result;
  result.data_offset = kLengthBytes + header_bytes;

  JsonError error;
  const std::optional<json> parsed =
      parse_json(std::string_view(reinterpret_cast<const char*>(header_span.data()), header_span.size()), error);
  if (!parsed) fail(path, "header is not valid JSON" + error.at());
  const json& header = *parsed;
  if (!header.is_object()) fail(path, "header: expected a JSON object, got " + describe(header));

  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      result.metadata = parse_metadata(path, value);
    } else {
      result.tensors.emplace(name, parse_tensor(path, name, value, data_bytes));
    }
  }
  check_no_overlap(path, result.tensors);
  return result;
}

}  // namespace specgate::safetensors
