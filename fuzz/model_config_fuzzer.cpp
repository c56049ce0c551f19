// Fuzz target: a checkpoint's config.json, parsed as read_model_config parses it, and written
// back as save_transformer writes it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/json_value.h"
#include "impl/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specgate;
  JsonError error;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::optional<nlohmann::json> parsed = parse_json(text, error);
  if (!parsed) return 0;
  ModelConfig config;
  try {
    config = parse_model_config(*parsed, "config.json", text);
  } catch (const InputError&) {
    return 0;
  }
  // What was accepted is written back readable and unchanged; an InputError here is a bug too.
  const nlohmann::json written = to_json(config);
  if (to_json(parse_model_config(written, "written config.json")) != written) __builtin_trap();
  return 0;
}
