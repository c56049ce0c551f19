#include "impl/model/vector_isa.h"

#include <string>

#include <ATen/Version.h>

namespace specgate {

VectorIsa vector_isa() {
  static const VectorIsa isa = [] {
    const std::string capability = at::get_cpu_capability();
    return capability == "AVX512" ? VectorIsa::kAvx512 : capability == "AVX2" ? VectorIsa::kAvx2 : VectorIsa::kNone;
  }();
  return isa;
}

}  // namespace specgate
