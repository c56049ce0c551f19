#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "impl/common/regular_file.h"
#include "impl/common/sha256.h"

namespace specgate {

// The longest line of a JSONL file read: an answer with 20 alternatives for each of thousands
// of tokens takes a few MiB.
inline constexpr size_t kMaxLineBytes = size_t{16} << 20;

// Reads a text file line by line in large blocks, hashing every byte on the way, so that a
// file of any size is read once with memory bounded by kMaxLineBytes. A UTF-8 byte order mark
// before the first line is skipped.
class LineReader {
 public:
  // Throws InputError naming the path as RegularFile does: when it does not exist, is a folder, a
  // FIFO or anything but a regular file, or cannot be opened.
  explicit LineReader(const std::filesystem::path& path);

  // The next line without its end of line (LF or CRLF); false at the end of the file. A last
  // line without a final newline counts. Throws InputError on a read error or a line longer
  // than kMaxLineBytes.
  bool next(std::string& line);

  int64_t line_number() const { return line_number_; }  // of the line next() returned last
  uint64_t line_offset() const { return line_offset_; }  // its first byte in the file
  const std::filesystem::path& path() const { return path_; }
  // The file's SHA-256 and size; valid once next() has returned false.
  const std::string& sha256() const { return sha256_; }
  uint64_t bytes() const { return consumed_; }

 private:
  bool refill();

  std::filesystem::path path_;
  RegularFile file_;
  bool ended_ = false;
  Sha256 hash_;
  std::string sha256_;
  std::vector<char> buffer_;
  size_t position_ = 0, filled_ = 0;
  uint64_t consumed_ = 0;  // bytes before buffer_[position_]
  int64_t line_number_ = 0;
  uint64_t line_offset_ = 0;
};

// The line starting at byte `offset` of `path` (as LineReader::line_offset() gave it), read
// through a RegularFile.
std::string read_line_at(const std::filesystem::path& path, uint64_t offset);

}  // namespace specgate
