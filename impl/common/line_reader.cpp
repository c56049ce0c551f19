#include "impl/common/line_reader.h"

#include <cstring>
#include <string_view>
#include <system_error>

#include "impl/common/error.h"

namespace specgate {
namespace {

constexpr size_t kBlockBytes = 1 << 20;

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

void strip_carriage_return(std::string& line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
}

}  // namespace

LineReader::LineReader(const std::filesystem::path& path) : path_(path), file_(path, path.string()), buffer_(kBlockBytes) {}

bool LineReader::refill() {
  consumed_ += filled_;
  position_ = filled_ = 0;
  if (ended_) return false;
  try {
    filled_ = file_.read(buffer_);
  } catch (const InputError&) {
    throw InputError(path_.string() + ": read error after line " + std::to_string(line_number_));
  }
  hash_.update({buffer_.data(), filled_});
  ended_ = filled_ == 0;
  return !ended_;
}

bool LineReader::next(std::string& line) {
  line.clear();
  const uint64_t start = consumed_ + position_;
  bool any_byte = false;
  while (true) {
    if (position_ == filled_ && !refill()) {
      if (sha256_.empty()) sha256_ = hash_.hex_digest();
      if (!any_byte) return false;
      break;
    }
    any_byte = true;
    const char* begin = buffer_.data() + position_;
    const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', filled_ - position_));
    if (newline != nullptr) {
      line.append(begin, static_cast<size_t>(newline - begin));
      position_ += static_cast<size_t>(newline - begin) + 1;
      break;
    }
    line.append(begin, filled_ - position_);
    position_ = filled_;
    if (line.size() > kMaxLineBytes)
      throw InputError(path_.string() + ":" + std::to_string(line_number_ + 1) + ": the line is longer than " +
                       std::to_string(kMaxLineBytes >> 20) + " MiB");
  }
  strip_carriage_return(line);
  if (line_number_ == 0 && line.starts_with(kByteOrderMark)) line.erase(0, kByteOrderMark.size());
  ++line_number_;
  line_offset_ = start;
  return true;
}

std::string read_line_at(const std::filesystem::path& path, uint64_t offset) {
  const RegularFile file(path, path.string());
  std::string line;
  std::vector<char> block(1 << 16);
  for (uint64_t at = offset; line.size() <= kMaxLineBytes;) {
    const size_t got = file.read_at(at, block);
    if (got == 0 && at == offset) throw InputError(path.string() + ": cannot read back the line at byte " + std::to_string(offset));
    const auto* newline = static_cast<const char*>(std::memchr(block.data(), '\n', got));
    line.append(block.data(), newline != nullptr ? static_cast<size_t>(newline - block.data()) : got);
    if (newline != nullptr || got == 0) break;
    at += got;
  }
  strip_carriage_return(line);
  if (offset == 0 && line.starts_with(kByteOrderMark)) line.erase(0, kByteOrderMark.size());
  return line;
}

}  // namespace specgate
