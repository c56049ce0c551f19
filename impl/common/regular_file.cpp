#include "impl/common/regular_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/common/error.h"

namespace specgate {
namespace {

// What a file that is not a regular one is, for messages.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "neither a file nor a folder";
}

}  // namespace

RegularFile::RegularFile(const std::filesystem::path& path, std::string name, std::optional<uint64_t> max_bytes,
                         const std::string& what)
    : name_(std::move(name)) {
  // O_NONBLOCK: opening a FIFO for reading does not wait for a writer; it is refused below.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    if (error == ENOENT) throw InputError(name_ + ": no such file");
    throw InputError(name_ + ": cannot open: " + std::strerror(error));
  }
  struct stat status {};
  if (::fstat(fd_, &status) != 0 || !S_ISREG(status.st_mode)) {
    const std::string kind = kind_of(status.st_mode);
    ::close(fd_);
    throw InputError(name_ + ": not a regular file (" + kind + ")");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(status.st_size);
  if (max_bytes && size_ > *max_bytes) {
    ::close(fd_);
    throw InputError(name_ + ": " + std::to_string(size_) + " bytes, more than the " + std::to_string(*max_bytes >> 20) +
                     " MiB " + what + " may be");
  }
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : name_(std::move(other.name_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t RegularFile::read(std::span<char> buffer) {
  while (true) {
    const ssize_t got = ::read(fd_, buffer.data(), buffer.size());
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) throw InputError(name_ + ": read error: " + std::strerror(errno));
  }
}

size_t RegularFile::read_at(uint64_t offset, std::span<char> buffer) const {
  size_t filled = 0;
  while (filled < buffer.size()) {
    const ssize_t got = ::pread(fd_, buffer.data() + filled, buffer.size() - filled, static_cast<off_t>(offset + filled));
    if (got == 0) break;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(name_ + ": read error: " + std::strerror(errno));
    filled += static_cast<size_t>(got);
  }
  return filled;
}

std::string RegularFile::read_rest() {
  std::string text;
  text.reserve(static_cast<size_t>(size_));
  char block[1 << 16];
  for (size_t got; (got = read(block)) > 0;) text.append(block, got);
  return text;
}

}  // namespace specgate
