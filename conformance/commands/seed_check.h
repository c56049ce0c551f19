#pragma once

#include <CLI/CLI.hpp>

namespace specgate::cli {

// A seed flag's value: a decimal integer in [0, 2^64). CLI11 alone reads one past it as 2^64 - 1.
CLI::Validator seed_check();

}  // namespace specgate::cli
