#include "conformance/bench/machine_info.h"

#include <sys/utsname.h>

#include <fstream>
#include <string>
#include <thread>

#include <ATen/Context.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/api/include/torch/version.h>

#include "impl/common/cpu_configuration.h"

namespace specgate::cli {
namespace {

// The value of the first "key : value" line of a /proc file whose key is `key`.
std::string proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name != key) continue;
    const size_t value = line.find_first_not_of(" \t", colon + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

}  // namespace

nlohmann::ordered_json machine_info(c10::Device device) {
  nlohmann::ordered_json machine;
  machine["cpu"] = proc_field("/proc/cpuinfo", "model name");
  machine["logical_cores"] = std::thread::hardware_concurrency();
  const CpuConfiguration cpu = current_cpu_configuration();
  machine["torch_threads"] = cpu.intra_op_threads;
  machine["threads_set_by"] = "specgate: one libtorch intra-op thread";
  machine["math_library"] = cpu.math_library;
  const std::string memory = proc_field("/proc/meminfo", "MemTotal");  // "NNN kB"
  machine["memory_bytes"] = memory.empty() ? 0 : std::stoll(memory) * 1024;
  utsname system{};
  if (uname(&system) == 0) machine["system"] = std::string(system.sysname) + " " + system.release + " " + system.machine;
  machine["libtorch"] = TORCH_VERSION;
  machine["device"] = device.str();
  machine["cuda_available"] = at::hasCUDA();
  return machine;
}

}  // namespace specgate::cli
