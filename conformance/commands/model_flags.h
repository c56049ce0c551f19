#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace specgate::cli {

// --dtype and --device: how a command loads its models.
struct ModelFlags {
  std::string dtype;  // the command's default until parsed
  std::string device = "cpu";

  c10::ScalarType scalar_type() const;  // InputError naming --dtype
  c10::Device torch_device() const;     // InputError naming --device
};

// --dtype, --device and --threads (which sets libtorch's intra-op threads as it is parsed).
// `dtype_help` says which models the dtype applies to.
void add_model_flags(CLI::App& command, ModelFlags& flags, const std::string& dtype_help);

}  // namespace specgate::cli
