#include "impl/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "impl/checkpoint/safetensors_header.h"
#include "impl/common/error.h"

namespace specgate::safetensors {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little, "tensor bytes are read and written in place");

struct DtypeCode {
  const char* code;
  at::ScalarType dtype;
};

constexpr std::array<DtypeCode, 10> kDtypes = {{
    {"F64", at::kDouble},
    {"F32", at::kFloat},
    {"F16", at::kHalf},
    {"BF16", at::kBFloat16},
    {"I64", at::kLong},
    {"I32", at::kInt},
    {"I16", at::kShort},
    {"I8", at::kChar},
    {"U8", at::kByte},
    {"BOOL", at::kBool},
}};

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError(path.string() + ": " + what);
}

std::string tensor_label(const std::string& name) { return "tensor '" + name + "'"; }

std::optional<at::ScalarType> dtype_of_code(const std::string& code) {
  for (const DtypeCode& known : kDtypes) {
    if (code == known.code) return known.dtype;
  }
  return std::nullopt;
}

const char* code_of_dtype(at::ScalarType dtype) {
  for (const DtypeCode& known : kDtypes) {
    if (dtype == known.dtype) return known.code;
  }
  return nullptr;
}

bool is_utf8(const std::string& text) {
  try {
    json(text).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

at::Tensor stored_form(const at::Tensor& tensor) {
  const at::Tensor dense = tensor.layout() == at::kStrided ? tensor : tensor.to_dense();
  return dense.detach().to(at::kCPU).contiguous();
}

std::string header_text(const std::filesystem::path& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    for (const auto& [key, text] : metadata) {
      if (!is_utf8(key) || !is_utf8(text)) fail(path, "field '__metadata__." + key + "': not valid UTF-8");
    }
    header[kMetadataKey] = metadata;
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const std::string where = tensor_label(name) + ": ";
    if (name == kMetadataKey) fail(path, where + "the name is reserved for metadata");
    if (!is_utf8(name)) fail(path, where + "the name is not valid UTF-8");
    if (header.contains(name)) fail(path, where + "given twice");
    if (!tensor.defined()) fail(path, where + "undefined tensor");
    const char* code = code_of_dtype(tensor.scalar_type());
    if (code == nullptr)
      fail(path, where + "safetensors cannot hold dtype " + std::string(c10::toString(tensor.scalar_type())));
    const uint64_t bytes = tensor.numel() * tensor.element_size();
    header[name] = {{"dtype", code}, {"shape", tensor.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((kLengthBytes - text.size() % kLengthBytes) % kLengthBytes, ' ');
  return text;
}

}  // namespace

struct File::Contents {
  explicit Contents(std::filesystem::path file);
  Contents(const Contents&) = delete;
  Contents& operator=(const Contents&) = delete;
  ~Contents() {
    if (size > 0) munmap(const_cast<uint8_t*>(bytes), size);
  }

  std::filesystem::path path;
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  const uint8_t* data = nullptr;  // the data section
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};

File::Contents::Contents(std::filesystem::path file) : path(std::move(file)) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  const bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  const size_t file_size = regular ? static_cast<size_t>(info.st_size) : 0;
  void* mapped = file_size > 0 ? mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  const int map_errno = errno;
  ::close(fd);
  if (!regular) fail(path, "not a regular file");
  if (mapped == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(map_errno));
  bytes = static_cast<const uint8_t*>(mapped);
  size = file_size;
}

File::File(std::shared_ptr<const Contents> contents) : contents_(std::move(contents)) {}

File File::open(const std::filesystem::path& path) {
  auto contents = std::make_shared<Contents>(path);
  Header header = parse_header(path, std::span<const uint8_t>(contents->bytes, contents->size));
  contents->data = contents->bytes + header.data_offset;
  for (auto& [name, entry] : header.tensors)
    contents->tensors.emplace(name, TensorInfo{*dtype_of_code(entry.dtype), std::move(entry.shape), entry.begin, entry.end});
  contents->metadata = std::move(header.metadata);
  return File(std::move(contents));
}

const std::filesystem::path& File::path() const { return contents_->path; }

std::vector<std::string> File::names() const {
  std::vector<std::string> names;
  for (const auto& [name, info] : contents_->tensors) names.push_back(name);
  return names;
}

bool File::contains(const std::string& name) const { return contents_->tensors.contains(name); }

const std::map<std::string, std::string>& File::metadata() const { return contents_->metadata; }

const TensorInfo& File::info(const std::string& name) const {
  const auto found = contents_->tensors.find(name);
  if (found == contents_->tensors.end()) fail(contents_->path, tensor_label(name) + ": not in this file");
  return found->second;
}

at::ScalarType File::dtype(const std::string& name) const { return info(name).dtype; }

std::vector<int64_t> File::shape(const std::string& name) const { return info(name).shape; }

at::Tensor File::tensor(const std::string& name) const {
  const TensorInfo& found = info(name);
  const auto options = at::TensorOptions().dtype(found.dtype).device(at::kCPU);
  const size_t bytes = found.end - found.begin;
  if (bytes == 0) return at::empty(found.shape, options);
  const uint8_t* data = contents_->data + found.begin;
  if (reinterpret_cast<uintptr_t>(data) % c10::elementSize(found.dtype) != 0) {
    at::Tensor copy = at::empty(found.shape, options);
    std::memcpy(copy.data_ptr(), data, bytes);
    return copy;
  }
  // The deleter's reference keeps the mapping alive as long as the tensor.
  auto release = [contents = contents_](void*) {};
  return at::from_blob(const_cast<uint8_t*>(data), found.shape, release, options);
}

void write(const std::filesystem::path& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
           const std::map<std::string, std::string>& metadata) {
  const std::string header = header_text(path, tensors, metadata);
  const std::filesystem::path partial = path.string() + ".partial";
  try {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) fail(partial, std::string("cannot create: ") + std::strerror(errno));
    const uint64_t length = header.size();
    out.write(reinterpret_cast<const char*>(&length), kLengthBytes);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& [name, tensor] : tensors) {
      const at::Tensor stored = stored_form(tensor);
      if (stored.nbytes() > 0)
        out.write(static_cast<const char*>(stored.data_ptr()), static_cast<std::streamsize>(stored.nbytes()));
    }
    out.close();
    if (!out) fail(partial, "cannot write");
    std::error_code error;
    std::filesystem::rename(partial, path, error);
    if (error) fail(path, "cannot rename " + partial.string() + " into place: " + error.message());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw;
  }
}

}  // namespace specgate::safetensors
