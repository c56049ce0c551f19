#pragma once

#include <stdexcept>
#include <string>

namespace specgate::cli {

// Thrown by a command that a signal (SIGINT, SIGTERM) stopped early, after it wrote what it had
// finished. main() prints the message as one line on stderr and exits 130, as shells report an
// interrupt.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace specgate::cli
