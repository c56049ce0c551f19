#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace specgate {

// A user's input file (a tree, a bench, answers, a JSON file, a run's output read back), opened
// for reading only when it is a regular file: it is opened without waiting (a FIFO's writer is
// never waited for) and checked before a byte is read, so a folder, a FIFO, a socket or a device
// is refused at once. The one way every input file is opened.
class RegularFile {
 public:
  // Throws InputError "<name>: no such file", "<name>: not a regular file (a folder)" (a FIFO, a
  // socket, a device), "<name>: cannot open: <why>", or, with `max_bytes`, "<name>: N bytes, more
  // than the M MiB <what> may be".
  RegularFile(const std::filesystem::path& path, std::string name, std::optional<uint64_t> max_bytes = std::nullopt,
              const std::string& what = "the file");
  ~RegularFile();
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) = delete;

  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }  // when it was opened
  // The next bytes into `buffer`, as many as there are up to its size; 0 at the end. InputError
  // "<name>: read error: <why>" otherwise.
  size_t read(std::span<char> buffer);
  // The bytes from `offset` on into `buffer`, leaving the position of read() alone.
  size_t read_at(uint64_t offset, std::span<char> buffer) const;
  // What is left of the file.
  std::string read_rest();

 private:
  std::string name_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace specgate
