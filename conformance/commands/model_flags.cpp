#include "conformance/commands/model_flags.h"

#include <ATen/Parallel.h>

#include "impl/common/device.h"
#include "impl/common/dtype.h"

namespace specgate::cli {

c10::ScalarType ModelFlags::scalar_type() const { return dtype_from_name(dtype, "--dtype"); }

c10::Device ModelFlags::torch_device() const { return device_from_name(device, "--device"); }

void add_model_flags(CLI::App& command, ModelFlags& flags, const std::string& dtype_help) {
  command.add_option("--dtype", flags.dtype, dtype_help + ": float64, float32, bfloat16 or float16")->capture_default_str();
  command.add_option("--device", flags.device, "cpu or cuda")->capture_default_str();
  command
      .add_option_function<int>(
          "--threads", [](int threads) { at::set_num_threads(threads); },
          "libtorch intra-op threads the models compute on (default 1: a small model's operators are too small to "
          "split; one whose weights take hundreds of MB streams them faster on more cores, its sums rounding otherwise when split)")
      ->check(CLI::Range(1, 1024));
}

}  // namespace specgate::cli
