#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "property_tests/failure_recorder.h"
#include "property_tests/properties/decode_properties.h"
#include "property_tests/properties/mutant_runner.h"

namespace specgate {
namespace {

using props::decode_property;

void check_property(std::string_view name) {
  const props::DecodeProperty& property = decode_property(name);
  props::check_generated_case(property, FaultSet{}, [&](const props::DecodeCase& c, const std::string& verdict) {
    props::last_failure() = props::RecordedFailure{std::string(property.name), c, verdict};
  });
}

RC_GTEST_PROP(DecodeProperties, OracleEquivalence, ()) { check_property("oracle-equivalence"); }
RC_GTEST_PROP(DecodeProperties, Invariants, ()) { check_property("invariants"); }
RC_GTEST_PROP(DecodeProperties, ScriptedAcceptance, ()) { check_property("scripted-acceptance"); }
RC_GTEST_PROP(DecodeProperties, RowIsolation, ()) { check_property("row-isolation"); }
RC_GTEST_PROP(DecodeProperties, ExspecPool, ()) { check_property("exspec-pool"); }
RC_GTEST_PROP(DecodeProperties, Determinism, ()) { check_property("determinism"); }
RC_GTEST_PROP(DecodeProperties, Cancellation, ()) { check_property("cancellation"); }
RC_GTEST_PROP(DecodeProperties, MixedSampling, ()) { check_property("mixed-sampling"); }
RC_GTEST_PROP(DecodeProperties, TreeEquivalence, ()) { check_property("tree-equivalence"); }

// Each property, on its own, fails under the fault it is there to catch (no shrinking).
TEST(DecodeProperties, EachPropertyCatchesTheFaultItTargets) {
  const std::vector<std::pair<std::string_view, Fault>> targets = {
      {"oracle-equivalence", Fault::kBonusLogitOffByOne},
      {"invariants", Fault::kDraftCacheShort},
      {"scripted-acceptance", Fault::kCountAfterMismatch},
      {"row-isolation", Fault::kMaskLetsPaddingThrough},
      {"exspec-pool", Fault::kRefillLosesSequence},
      {"determinism", Fault::kSharedRandomStream},
      {"cancellation", Fault::kCancelShiftsRows},
      {"mixed-sampling", Fault::kSharedRandomStream},
  };
  for (const auto& [name, fault] : targets) {
    FaultSet faults;
    faults.add(fault);
    props::MutantOutcome outcome;
    const bool failed =
        props::find_counterexample(decode_property(name), faults, {.cases = 100, .seed = 7, .shrink = false}, outcome);
    EXPECT_TRUE(failed) << name << " missed " << fault_name(fault);
    if (failed) std::cout << "[" << name << " / " << fault_name(fault) << "] case " << outcome.cases << ": " << outcome.verdict.substr(0, 200) << "\n";
  }
}

}  // namespace
}  // namespace specgate
