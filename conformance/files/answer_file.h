#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>

#include "impl/bench/answer.h"

namespace specgate::cli {

// An answer JSONL written one whole line at a time, each flushed as it is written, so that a
// run that ends early leaves complete answers only.
class AnswerFile {
 public:
  // Creates the folder and the (empty) file; InputError naming the path otherwise.
  explicit AnswerFile(std::filesystem::path path);
  // InputError when the line does not reach the file.
  void write(const Answer& answer);
  size_t lines() const { return lines_; }
  // Closes and deletes the file: for runs that end in an error rather than a verdict.
  void remove();

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  size_t lines_ = 0;
};

}  // namespace specgate::cli
