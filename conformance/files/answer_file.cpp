#include "conformance/files/answer_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "impl/common/error.h"
#include "impl/common/line_reader.h"

namespace specgate::cli {

uint64_t resumable_bytes(const std::string& flag, const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) return 0;
  if (error) throw InputError(flag + ": " + path.string() + ": " + error.message());
  if (status.type() == std::filesystem::file_type::directory) throw InputError(flag + ": " + path.string() + " is a folder");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(flag + ": " + path.string() + ": cannot be read");
  const auto size = static_cast<uint64_t>(in.tellg());
  constexpr uint64_t kBlock = 64 * 1024;
  std::vector<char> block(kBlock);
  for (uint64_t end = size; end > 0;) {
    const uint64_t start = end > kBlock ? end - kBlock : 0;
    in.seekg(static_cast<std::streamoff>(start));
    in.read(block.data(), static_cast<std::streamsize>(end - start));
    if (!in) throw InputError(flag + ": " + path.string() + ": cannot be read");
    uint64_t newline_end = 0;
    for (uint64_t i = end; i > start && newline_end == 0; --i) {
      if (block[i - 1 - start] == '\n') newline_end = i;
    }
    end = newline_end != 0 ? newline_end : start;
    if (size - end > kMaxLineBytes)
      throw InputError(flag + ": " + path.string() + ": more than " + std::to_string(kMaxLineBytes) +
                       " bytes follow its last newline, more than any answer line holds; it is no answer file cut short");
    if (newline_end != 0) return newline_end;
  }
  return 0;
}

AnswerFile::AnswerFile(const std::string& flag, const std::filesystem::path& path, const std::vector<NamedInput>& inputs,
                       bool resume)
    : out_(flag, path, inputs) {
  if (!resume) return;
  uint64_t left = resumable_bytes(flag, path);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> block(1 << 20);
  while (left > 0) {
    const auto chunk = static_cast<std::streamsize>(std::min<uint64_t>(left, block.size()));
    if (!in.read(block.data(), chunk)) throw InputError(flag + ": " + path.string() + ": cannot be read");
    out_.stream().write(block.data(), chunk);
    left -= static_cast<uint64_t>(chunk);
  }
  out_.flush();
}

void AnswerFile::write(const Answer& answer) {
  std::ostringstream line;
  write_answer_line(line, answer);
  out_.stream() << line.view();
  out_.flush();
  ++lines_;
}

}  // namespace specgate::cli
