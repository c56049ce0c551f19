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

LineReader::LineReader(const std::filesystem::path& path) : path_(path), buffer_(kBlockBytes) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) throw InputError(path.string() + ": no such file");
  if (error) throw InputError(path.string() + ": cannot access: " + error.message());
  if (std::filesystem::is_directory(status)) throw InputError(path.string() + ": is a directory, expected a .jsonl file");
  in_.open(path, std::ios::binary);
  if (!in_) throw InputError(path.string() + ": cannot open for reading");
}

bool LineReader::refill() {
  consumed_ += filled_;
  position_ = filled_ = 0;
  if (!in_) return false;
  in_.read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  if (in_.bad()) throw InputError(path_.string() + ": read error after line " + std::to_string(line_number_));
  filled_ = static_cast<size_t>(in_.gcount());
  hash_.update({buffer_.data(), filled_});
  return filled_ > 0;
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
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string line;
  if (!in || !std::getline(in, line)) throw InputError(path.string() + ": cannot read back the line at byte " + std::to_string(offset));
  strip_carriage_return(line);
  if (offset == 0 && line.starts_with(kByteOrderMark)) line.erase(0, kByteOrderMark.size());
  return line;
}

}  // namespace specgate
