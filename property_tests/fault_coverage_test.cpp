#include <gtest/gtest.h>

#include "property_tests/properties/decode_case.h"
#include "property_tests/properties/fault_coverage.h"

namespace specgate {
namespace {

// A few runs of the measurement behind score's coverage warning: a layout fault never shows in
// a row that was not realigned and shows in some that were; a fault of verification shows
// whether or not rows moved.
TEST(FaultCoverage, LayoutFaultsShowOnlyInRealignedRows) {
  const props::FaultCoverageTable table = props::measure_fault_coverage(
      {.trials = 3, .ragged_rounds = {0, 4}, .faults = {Fault::kKvNotShifted, Fault::kBonusFromDraft}});
  ASSERT_EQ(table.faults.size(), 4u);
  for (const props::FaultCoverage& fault : table.faults) {
    SCOPED_TRACE(std::string(fault_name(fault.fault)) + " on " + std::string(props::decoder_name(fault.decoder)));
    int64_t realigned_rows = 0, caught_realigned = 0;
    for (const props::CoverageBucket& bucket : fault.rows) {
      if (bucket.low == 0) continue;
      realigned_rows += bucket.count;
      caught_realigned += bucket.caught;
    }
    EXPECT_GT(realigned_rows, 0);
    EXPECT_GT(caught_realigned, 0);
    EXPECT_EQ(fault.shows_without_realignment, fault.fault == Fault::kBonusFromDraft);
    if (fault.fault == Fault::kKvNotShifted) {
      EXPECT_TRUE(fault.realignments_for_95.has_value());
    }
  }
  ASSERT_TRUE(table.threshold.has_value());
}

}  // namespace
}  // namespace specgate
