#include "impl/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate::safetensors {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<const char*, at::ScalarType>, 10> kDtypes = {{
    {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf}, {"BF16", at::kBFloat16}, {"I64", at::kLong},
    {"I32", at::kInt}, {"I16", at::kShort}, {"I8", at::kChar}, {"U8", at::kByte}, {"BOOL", at::kBool},
}};

// Headers larger than this are refused rather than parsed (the reference implementation's limit).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError(path.string() + ": " + what);
}

std::string dtype_code(at::ScalarType dtype) {
  for (const auto& [code, type] : kDtypes) {
    if (type == dtype) return code;
  }
  return "";
}

}  // namespace

struct File::Mapping {
  std::filesystem::path path;
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  size_t data_start = 0;

  ~Mapping() {
    if (bytes != nullptr && size > 0) munmap(const_cast<uint8_t*>(bytes), size);
  }
};

File::File(std::shared_ptr<const Mapping> mapping, std::map<std::string, Entry> entries,
           std::map<std::string, std::string> metadata)
    : mapping_(std::move(mapping)), entries_(std::move(entries)), metadata_(std::move(metadata)) {}

File File::open(const std::filesystem::path& path) {
  auto mapping = std::make_shared<Mapping>();
  mapping->path = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    ::close(fd);
    fail(path, "cannot stat");
  }
  mapping->size = static_cast<size_t>(info.st_size);
  if (mapping->size > 0) {
    void* bytes = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (bytes == MAP_FAILED) {
      ::close(fd);
      fail(path, std::string("cannot map: ") + std::strerror(errno));
    }
    mapping->bytes = static_cast<const uint8_t*>(bytes);
  }
  ::close(fd);

  if (mapping->size < 8) fail(path, "truncated: shorter than the 8-byte header length");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | mapping->bytes[i];
  if (header_bytes > kMaxHeaderBytes || header_bytes > mapping->size - 8)
    fail(path, "truncated or corrupt: header length " + std::to_string(header_bytes) + " exceeds the file (" +
                   std::to_string(mapping->size) + " bytes)");
  mapping->data_start = 8 + header_bytes;
  const size_t data_bytes = mapping->size - mapping->data_start;

  const json header = json::parse(mapping->bytes + 8, mapping->bytes + 8 + header_bytes, nullptr, false);
  if (header.is_discarded() || !header.is_object()) fail(path, "header is not a JSON object");

  std::map<std::string, Entry> entries;
  std::map<std::string, std::string> metadata;
  for (const auto& [name, value] : header.items()) {
    const std::string where = "tensor '" + name + "': ";
    if (name == "__metadata__") {
      if (!value.is_object()) fail(path, "__metadata__: expected an object of strings");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) fail(path, "__metadata__: field '" + key + "': expected a string");
        metadata[key] = text.get<std::string>();
      }
      continue;
    }
    if (!value.is_object()) fail(path, where + "expected an object");
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(field)) fail(path, where + "field '" + field + "' is missing");
    }
    const json& dtype = value["dtype"];
    const auto known = std::find_if(kDtypes.begin(), kDtypes.end(),
                                    [&](const auto& d) { return dtype.is_string() && dtype.get<std::string>() == d.first; });
    if (known == kDtypes.end()) fail(path, where + "field 'dtype': unsupported dtype " + dtype.dump());
    Entry entry{known->second, {}, 0, 0};

    const json& shape = value["shape"];
    if (!shape.is_array()) fail(path, where + "field 'shape': expected a list of sizes");
    uint64_t numel = 1;
    for (const json& size : shape) {
      if (!size.is_number_unsigned()) fail(path, where + "field 'shape': expected non-negative integers, got " + shape.dump());
      entry.shape.push_back(size.get<int64_t>());
      numel *= size.get<uint64_t>();
    }
    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      fail(path, where + "field 'data_offsets': expected [begin, end], got " + offsets.dump());
    entry.begin = offsets[0].get<size_t>();
    entry.end = offsets[1].get<size_t>();
    if (entry.begin > entry.end || entry.end > data_bytes)
      fail(path, where + "data_offsets " + offsets.dump() + " exceed the data section (" + std::to_string(data_bytes) +
                     " bytes): truncated or corrupt file");
    const uint64_t expected_bytes = numel * c10::elementSize(entry.dtype);
    if (entry.end - entry.begin != expected_bytes)
      fail(path, where + "holds " + std::to_string(entry.end - entry.begin) + " bytes, but dtype and shape need " +
                     std::to_string(expected_bytes));
    entries.emplace(name, std::move(entry));
  }

  std::vector<std::pair<size_t, std::string>> by_offset;
  for (const auto& [name, entry] : entries) by_offset.emplace_back(entry.begin, name);
  std::sort(by_offset.begin(), by_offset.end());
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const Entry& previous = entries.at(by_offset[i - 1].second);
    if (by_offset[i].first < previous.end)
      fail(path, "tensor '" + by_offset[i].second + "' overlaps tensor '" + by_offset[i - 1].second + "'");
  }
  return File(std::move(mapping), std::move(entries), std::move(metadata));
}

const std::filesystem::path& File::path() const { return mapping_->path; }

std::vector<std::string> File::names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

bool File::contains(const std::string& name) const { return entries_.contains(name); }

const std::map<std::string, std::string>& File::metadata() const { return metadata_; }

at::Tensor File::tensor(const std::string& name) const {
  const auto found = entries_.find(name);
  if (found == entries_.end()) fail(mapping_->path, "tensor '" + name + "' is not in the file");
  const Entry& entry = found->second;
  const auto options = at::TensorOptions().dtype(entry.dtype);
  const uint8_t* data = mapping_->bytes + mapping_->data_start + entry.begin;
  if (entry.begin == entry.end) return at::empty(entry.shape, options);
  if (reinterpret_cast<uintptr_t>(data) % c10::elementSize(entry.dtype) != 0) {
    at::Tensor copy = at::empty(entry.shape, options);
    std::memcpy(copy.data_ptr(), data, entry.end - entry.begin);
    return copy;
  }
  std::shared_ptr<const Mapping> keep_alive = mapping_;
  return at::from_blob(const_cast<uint8_t*>(data), entry.shape, [keep_alive](void*) {}, options);
}

void write(const std::filesystem::path& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
           const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> contiguous;
  std::set<std::string> seen;
  size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__" || !seen.insert(name).second)
      fail(path, "tensor '" + name + "': duplicate or reserved name");
    const std::string code = dtype_code(tensor.scalar_type());
    if (code.empty()) fail(path, "tensor '" + name + "': dtype " + std::string(c10::toString(tensor.scalar_type())) + " has no safetensors code");
    contiguous.push_back(tensor.detach().to(at::kCPU).contiguous());
    const size_t bytes = contiguous.back().nbytes();
    header[name] = {{"dtype", code}, {"shape", tensor.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  // Keys in the order given (nlohmann sorts objects), padded with spaces to 8 bytes.
  std::string text = "{";
  if (header.contains("__metadata__")) text += "\"__metadata__\":" + header["__metadata__"].dump();
  for (const auto& [name, tensor] : tensors) {
    if (text.size() > 1) text += ",";
    text += json(name).dump() + ":" + header[name].dump();
  }
  text += "}";
  text.append((8 - text.size() % 8) % 8, ' ');

  const std::filesystem::path temporary = path.string() + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    const uint64_t length = text.size();
    std::array<char, 8> length_bytes{};
    for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
    out.write(length_bytes.data(), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const at::Tensor& tensor : contiguous)
      out.write(static_cast<const char*>(tensor.data_ptr()), static_cast<std::streamsize>(tensor.nbytes()));
    if (!out) fail(temporary, "cannot write");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) fail(path, "cannot rename " + temporary.string() + " into place: " + error.message());
}

}  // namespace specgate::safetensors
