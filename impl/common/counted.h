#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace specgate {

// "1 answer", "3 answers": `count` and the regular noun in its number.
inline std::string counted(int64_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

}  // namespace specgate
