#pragma once

#include <stdexcept>
#include <string>

namespace specgate {

// Bad input from the user (files, flags, data). The message is one line that names
// the file and, where known, the line, tensor or field. The CLI maps it to exit code 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace specgate
