#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace specgate {

// A file a report was computed from, as the report names it.
struct InputFile {
  std::filesystem::path path;
  std::string sha256;
  uint64_t bytes = 0;
  int64_t records = 0;  // answers, or questions for the bench
};

}  // namespace specgate
