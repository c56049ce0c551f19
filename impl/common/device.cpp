#include "impl/common/device.h"

#include <string>

#include <ATen/Context.h>

#include "impl/common/error.h"

namespace specgate {

c10::Device device_from_name(std::string_view name, std::string_view what) {
  const std::string text(name);
  if (text == "cpu") return c10::Device(c10::kCPU);
  if (text == "cuda" || text.starts_with("cuda:")) {
    if (!at::hasCUDA()) throw InputError(std::string(what) + " " + text + ": no CUDA device is available to this build");
    try {
      return c10::Device(text);
    } catch (const c10::Error&) {
      throw InputError(std::string(what) + ": invalid device '" + text + "'");
    }
  }
  throw InputError(std::string(what) + ": unknown device '" + text + "' (expected cpu, cuda or cuda:N)");
}

}  // namespace specgate
