#include "impl/decoding/faults.h"

#include <array>
#include <string>

#include "impl/common/error.h"

namespace specgate {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(Fault::kCount)> kNames = {
    "bonus-from-draft",       "padding-never-removed", "stale-position-ids",  "kv-not-shifted",
    "rejected-kv-visible",    "bonus-not-fed",         "draft-cache-short",   "mask-lets-padding-through",
    "bonus-logit-off-by-one", "count-after-mismatch",  "tokens-after-eos-kept", "always-accept",
    "residual-not-normalised", "raw-draft-distribution", "bonus-kv-wrong-position", "cache-advanced-by-drafted",
    "shared-random-stream",   "greedy-verification",   "draft-filter-skipped", "stale-draft-distribution",
    "warpers-before-temperature",
    "cancel-shifts-rows",     "ragged-padding-verified", "ragged-bonus-from-padding",
    "tree-sibling-visible",   "tree-position-by-offset", "tree-path-not-compacted", "tree-wrong-branch-kv",
    "tree-sibling-not-renormalised", "tree-rejected-sibling-kept",
    "group-mixed-lengths",    "wrong-sequence-kv",     "refill-loses-sequence", "refill-duplicates-sequence",
};

}  // namespace

std::string_view fault_name(Fault fault) { return kNames[static_cast<size_t>(fault)]; }

std::vector<Fault> all_faults() {
  std::vector<Fault> faults;
  for (size_t i = 0; i < kNames.size(); ++i) faults.push_back(static_cast<Fault>(i));
  return faults;
}

bool is_exspec_only(Fault fault) { return fault >= Fault::kGroupMixedLengths; }

bool is_tree_only(Fault fault) { return fault >= Fault::kTreeSiblingVisible && fault <= Fault::kTreeRejectedSiblingKept; }

bool is_sampling_only(Fault fault) {
  return fault == Fault::kAlwaysAccept || fault == Fault::kResidualNotNormalised ||
         fault == Fault::kRawDraftDistribution || fault == Fault::kSharedRandomStream ||
         fault == Fault::kGreedyVerification || fault == Fault::kDraftFilterSkipped ||
         fault == Fault::kStaleDraftDistribution || fault == Fault::kWarpersBeforeTemperature ||
         fault == Fault::kTreeSiblingNotRenormalised || fault == Fault::kTreeRejectedSiblingKept;
}

Fault fault_from_name(std::string_view name) {
  if (!SPECGATE_FAULTS) throw InputError("--inject-fault: this build has no seeded faults (SPECGATE_FAULTS=OFF)");
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Fault>(i);
  }
  std::string known;
  for (std::string_view n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  throw InputError("--inject-fault: unknown fault '" + std::string(name) + "' (known: " + known + ")");
}

void require_committable(const FaultSet& faults, std::string_view engine, bool exspec_engine, bool greedy, bool trees) {
  for (Fault fault : all_faults()) {
    if (!faults.has(fault)) continue;
    const std::string prefix = "--inject-fault " + std::string(fault_name(fault)) + ": ";
    if (is_exspec_only(fault) && !exspec_engine)
      throw InputError(prefix + "an EXSPEC fault, which engine " + std::string(engine) + " cannot commit");
    if (is_sampling_only(fault) && greedy)
      throw InputError(prefix + "a sampling fault, which greedy decoding cannot commit (give --temperature > 0)");
    if (is_tree_only(fault) && !trees)
      throw InputError(prefix + "a fault of token trees, which engine " + std::string(engine) + " cannot commit without --tree");
    if (!is_tree_only(fault) && !is_exspec_only(fault) && trees)
      throw InputError(prefix + "a fault of chain rounds, which a tree decoder cannot commit");
  }
}

}  // namespace specgate
