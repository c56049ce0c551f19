#pragma once

#include <nlohmann/json.hpp>

#include "impl/scoring/input_file.h"

namespace specgate {

// {path, sha256, bytes, <count_name>: records}, as nlohmann::json or nlohmann::ordered_json.
template <typename Json>
Json input_file_json(const InputFile& file, const char* count_name) {
  return {{"path", file.path.string()}, {"sha256", file.sha256}, {"bytes", file.bytes}, {count_name, file.records}};
}

}  // namespace specgate
