#include "conformance/commands/answer_file.h"

#include <sstream>
#include <system_error>

#include "impl/common/error.h"

namespace specgate::cli {

AnswerFile::AnswerFile(std::filesystem::path path) : path_(std::move(path)) {
  std::error_code error;
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), error);
  if (error) throw InputError(path_.parent_path().string() + ": cannot create the folder: " + error.message());
  out_.open(path_, std::ios::binary);
  if (!out_) throw InputError(path_.string() + ": cannot open for writing");
}

void AnswerFile::write(const Answer& answer) {
  std::ostringstream line;
  write_answer_line(line, answer);
  if (!out_.write(line.view().data(), static_cast<std::streamsize>(line.view().size())).flush())
    throw InputError(path_.string() + ": cannot write");
  ++lines_;
}

void AnswerFile::remove() {
  out_.close();
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace specgate::cli
