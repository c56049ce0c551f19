#pragma once

#include <stdexcept>
#include <string>

namespace specgate::cli {

// Thrown by a command that reached a verdict against its input: a score gate failed, an
// invariant was violated, a mutant survived. Whatever the command could finish (reports,
// complete answer lines) is already written. main() prints the message, when there is one, as
// one line on stderr and exits 1.
class Verdict : public std::runtime_error {
 public:
  Verdict() : std::runtime_error("") {}
  explicit Verdict(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace specgate::cli
