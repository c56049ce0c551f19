#pragma once

#include <optional>
#include <string>

#include "property_tests/properties/decode_case.h"

namespace specgate::props {

// The last failing case of the running test (RapidCheck evaluates the shrunk counterexample
// last), which main() writes as a regression file when SPECGATE_REGRESSION_DIR is set.
struct RecordedFailure {
  std::string property;
  DecodeCase decode_case;
  std::string verdict;
};

inline std::optional<RecordedFailure>& last_failure() {
  static std::optional<RecordedFailure> failure;
  return failure;
}

}  // namespace specgate::props
