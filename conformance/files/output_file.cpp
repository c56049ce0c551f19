#include "conformance/commands/output_file.h"

#include <fstream>
#include <system_error>

#include "impl/common/error.h"

namespace specgate::cli {

void write_output_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  std::error_code error;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), error);
  if (error) throw InputError(path.parent_path().string() + ": cannot create the folder: " + error.message());
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path.string() + ": cannot open for writing");
  write(out);
  if (!out.flush()) throw InputError(path.string() + ": cannot write");
}

}  // namespace specgate::cli
