#include "conformance/files/output_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <system_error>

#include <sys/stat.h>
#include <unistd.h>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const std::string& flag, const fs::path& path, const std::string& problem) {
  throw InputError(flag + ": " + path.string() + ": " + problem);
}

void refuse_inputs(const std::string& flag, const fs::path& path, const std::vector<NamedInput>& inputs) {
  std::error_code error;
  const fs::path folder = fs::weakly_canonical(fs::absolute(path).parent_path(), error);
  for (const NamedInput& input : inputs) {
    if (input.path.empty()) continue;
    if (fs::is_directory(input.path, error)) {
      if (!folder.empty() && fs::equivalent(folder, input.path, error))
        refuse(flag, path, "lies inside " + input.flag + "'s folder, which it would change");
    } else if (fs::exists(path, error) && fs::equivalent(path, input.path, error)) {
      refuse(flag, path, "is also " + input.flag + ", which writing it would destroy");
    }
  }
}

// The permissions a new file gets from the umask, as an ofstream's file would.
mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

void check_output_path(const std::string& flag, const fs::path& path, const std::vector<NamedInput>& inputs) {
  if (path.empty()) throw InputError(flag + ": the path is empty");
  refuse_inputs(flag, path, inputs);
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) refuse(flag, path, "is a folder");
  if (fs::exists(status)) return;
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::exists(folder, error)) refuse(flag, path, "the folder " + folder.string() + " does not exist");
  if (!fs::is_directory(folder, error)) refuse(flag, path, folder.string() + " is not a folder");
}

OutputFile::OutputFile(std::string flag, fs::path path, const std::vector<NamedInput>& inputs)
    : flag_(std::move(flag)), path_(std::move(path)) {
  check_output_path(flag_, path_, inputs);
  std::error_code error;
  const fs::file_status status = fs::status(path_, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    out_.open(path_, std::ios::binary);
    if (!out_) refuse(flag_, path_, "cannot open for writing");
    return;
  }
  const fs::path folder = path_.has_parent_path() ? path_.parent_path() : fs::path(".");

  std::string name = (folder / std::string(".").append(path_.filename().string()).append(".XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) refuse(flag_, path_, std::string("cannot create a file in its folder: ") + std::strerror(errno));
  ::fchmod(fd, fs::exists(status) ? static_cast<mode_t>(status.permissions()) : new_file_mode());
  ::close(fd);
  temporary_ = name;
  out_.open(temporary_, std::ios::binary);
  if (!out_) refuse(flag_, path_, "cannot write in its folder");
}

OutputFile::~OutputFile() {
  if (temporary_.empty()) return;
  out_.close();
  std::error_code ignored;
  fs::remove(temporary_, ignored);
}

void OutputFile::flush() {
  if (!out_.flush()) refuse(flag_, path_, "cannot write (is the disk full?)");
}

void OutputFile::commit() {
  flush();
  out_.close();
  if (out_.fail()) refuse(flag_, path_, "cannot write (is the disk full?)");
  if (temporary_.empty()) return;
  std::error_code error;
  fs::rename(temporary_, path_, error);
  if (error) refuse(flag_, path_, "cannot put the written file in place: " + error.message());
  temporary_.clear();
}

void write_output_file(const std::string& flag, const fs::path& path, const std::function<void(std::ostream&)>& write,
                       const std::vector<NamedInput>& inputs) {
  OutputFile out(flag, path, inputs);
  write(out.stream());
  out.commit();
}

void write_reports(const std::vector<ReportFlag>& reports, const std::vector<NamedInput>& inputs) {
  for (size_t i = 0; i < reports.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (!reports[i].path.empty() && reports[i].path.lexically_normal() == reports[j].path.lexically_normal())
        throw InputError(std::string(reports[i].flag) + ": " + reports[i].path.string() + " is also " + reports[j].flag +
                         "'s path; give each report a file of its own");
    }
  }
  for (const ReportFlag& report : reports) {
    if (!report.path.empty()) write_output_file(report.flag, report.path, report.write, inputs);
  }
  for (const ReportFlag& report : reports) {
    if (!report.path.empty()) std::cout << "wrote " << report.path.string() << "\n";
  }
  std::cout.flush();
}

}  // namespace specgate::cli
