#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace specgate::cli {

// An input of a command, named by its flag for messages: a file, or a folder such as a checkpoint.
struct NamedInput {
  std::string flag;
  std::filesystem::path path;
};

// InputError, naming the flag and the path, for an empty path, a folder, a path in a folder that
// does not exist, or one that is one of `inputs` or lies inside an input folder.
void check_output_path(const std::string& flag, const std::filesystem::path& path, const std::vector<NamedInput>& inputs);

// A file a command writes, through a temporary file beside it that commit() renames over it: a
// run that fails leaves `path` as it was, and the program never removes what it did not create.
// What is not a regular file (/dev/stdout, a pipe) is written in place. InputError as
// check_output_path() says.
class OutputFile {
 public:
  OutputFile(std::string flag, std::filesystem::path path, const std::vector<NamedInput>& inputs = {});
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes out_; InputError naming the path when a byte did not reach the file.
  void flush();
  // Flushes and puts the file in place of `path`.
  void commit();

 private:
  std::string flag_;
  std::filesystem::path path_;
  std::filesystem::path temporary_;  // empty when written in place
  std::ofstream out_;
};

// Writes a whole file through an OutputFile.
void write_output_file(const std::string& flag, const std::filesystem::path& path,
                       const std::function<void(std::ostream&)>& write, const std::vector<NamedInput>& inputs = {});

// A report a command writes when its flag was given (an empty path: it was not).
struct ReportFlag {
  const char* flag;
  std::filesystem::path path;
  std::function<void(std::ostream&)> write;
};

// Writes every report asked for, then says "wrote PATH" for each on standard output. Two
// reports to one path are refused, naming both flags, before anything is written.
void write_reports(const std::vector<ReportFlag>& reports, const std::vector<NamedInput>& inputs);

}  // namespace specgate::cli
