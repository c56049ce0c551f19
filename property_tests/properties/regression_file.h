#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "impl/decoding/faults.h"
#include "property_tests/properties/decode_case.h"

namespace specgate::props {

// A counterexample kept under fixtures/regressions/ and replayed by ctest: the property must
// hold on the case, and, when the file names the fault that produced it, fail under that
// fault.
struct RegressionCase {
  std::string property;
  std::optional<Fault> fault;
  std::string verdict;   // what the property said when the case was found
  std::string found_by;  // e.g. "fuzz seed=42" or "conformance mutants"
  DecodeCase decode_case;
};

// Throws InputError naming the file and the field.
RegressionCase read_regression(const std::filesystem::path& file);
// Writes DIR/<property>[-<fault>]-<hash of the case>.json and returns its path.
std::filesystem::path write_regression(const std::filesystem::path& dir, const RegressionCase& regression);

}  // namespace specgate::props
