#include "conformance/files/answer_file.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace specgate::cli {

AnswerFile::AnswerFile(const std::string& flag, const std::filesystem::path& path, const std::vector<NamedInput>& inputs,
                       bool resume)
    : out_(flag, path, inputs) {
  if (!resume || !std::filesystem::is_regular_file(path)) return;
  std::ifstream in(path, std::ios::binary);
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t complete = content.rfind('\n') == std::string::npos ? 0 : content.rfind('\n') + 1;
  out_.stream().write(content.data(), static_cast<std::streamsize>(complete));
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
