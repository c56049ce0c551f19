// Fuzz target: the bytes of a safetensors file, whose header is parsed and checked as opening
// a checkpoint does; every tensor it accepts must lie inside the file.
#include <cstddef>
#include <cstdint>
#include <span>

#include "impl/checkpoint/safetensors_header.h"
#include "impl/common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specgate::safetensors;
  Header header;
  try {
    header = parse_header("fuzz.safetensors", std::span<const uint8_t>(data, size));
  } catch (const specgate::InputError&) {
    return 0;
  }
  if (header.data_offset > size) __builtin_trap();
  for (const auto& [name, entry] : header.tensors) {
    if (entry.begin > entry.end || entry.end > size - header.data_offset) __builtin_trap();
  }
  return 0;
}
