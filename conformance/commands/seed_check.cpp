#include "conformance/commands/seed_check.h"

#include <charconv>
#include <cstdint>
#include <string>

namespace specgate::cli {

CLI::Validator seed_check() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        uint64_t seed = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
        if (error == std::errc() && end == text.data() + text.size()) return "";
        return "must be an integer in [0, 18446744073709551615], got " + text;
      },
      "SEED");
}

}  // namespace specgate::cli
