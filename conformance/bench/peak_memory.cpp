#include "conformance/bench/peak_memory.h"

#include <fstream>
#include <string>

namespace specgate::cli {

int64_t peak_memory_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      int64_t kibibytes = 0;
      status >> kibibytes;
      return kibibytes * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

void reset_peak_memory() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

}  // namespace specgate::cli
