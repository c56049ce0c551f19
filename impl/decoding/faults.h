#pragma once

#include <bitset>
#include <string>
#include <string_view>
#include <vector>

namespace specgate {

// Seeded faults: each is one failure class of DESIGN.md section 1 that a decoder can be told
// to commit, so that the tests can show they catch it. All are off by default; checking one
// is a bit test.
enum class Fault {
  kBonusFromDraft,          // bonus taken from the draft instead of the target
  kPaddingNeverRemoved,     // re-padding adds K+1 slots per round and never trims
  kStalePositionIds,        // position ids keep the previous round's padding
  kKvNotShifted,            // target KV rows not moved with their tokens
  kRejectedKvVisible,       // rejected drafts' KV stay in the cache and visible
  kBonusNotFed,             // the bonus's K/V never enter either cache
  kDraftCacheShort,         // after a fully accepted round the draft cache misses the last draft
  kMaskLetsPaddingThrough,  // padding keys are valid in attention
  kBonusLogitOffByOne,      // bonus read one position too far
  kCountAfterMismatch,      // matches after the first mismatch are counted
  kTokensAfterEosKept,      // tokens past EOS or past max_new_tokens are kept
  kAlwaysAccept,            // sampling: every draft accepted
  kResidualNotNormalised,   // sampling: the residual max(0, p - q) used without renormalising
  kRawDraftDistribution,    // sampling: q in p/q is the unshaped draft softmax
  kBonusKvWrongPosition,    // the pending bonus is fed at the position after its own
  kCacheAdvancedByDrafted,  // the draft cache is taken to hold every drafted token
  kSharedRandomStream,      // sampling: every row draws from the first row's random stream
  kGreedyVerification,      // sampling: drafts checked against the target's argmax, bonus its argmax
  kDraftFilterSkipped,      // sampling: q in p/q is tempered but not top-k / top-p filtered
  kStaleDraftDistribution,  // sampling: q in p/q is a buffer filled in the first round, never refreshed
  kWarpersBeforeTemperature,  // sampling: top-k, top-p and min-p cut the untempered distribution
  kCancelShiftsRows,        // a cancelled row leaves, the rows after it move up one without their K/V
  kRaggedPaddingVerified,   // a row with fewer drafts than the batch's longest is tested on its padding too
  kRaggedBonusFromPadding,  // a row that kept all its drafts, fewer than the longest, takes its bonus after the padding
  // Trees only:
  kTreeSiblingVisible,     // a tree node sees the sibling before it too
  kTreePositionByOffset,   // a tree node's position id is the root's plus its place in the pass, not its depth
  kTreePathNotCompacted,   // the kept path's K/V stay where the tree pass wrote them
  kTreeWrongBranchKv,      // each kept node's K/V taken from its first sibling
  kTreeSiblingNotRenormalised,  // sampling: a sibling after a rejected one tested against p, not the renormalised residual
  kTreeRejectedSiblingKept,     // sampling: the bonus after rejected siblings drawn from p, their tokens still in it
  // EXSPEC only:
  kGroupMixedLengths,         // sequences of different lengths grouped without realignment
  kWrongSequenceKv,           // K/V written back into another sequence's slot of the pool
  kRefillLosesSequence,       // a sequence is skipped when the window is refilled
  kRefillDuplicatesSequence,  // a sequence enters the window twice
  kCount,
};

// A build with SPECGATE_FAULTS=0 (CMake option SPECGATE_FAULTS=OFF) commits none: every
// check below is false at compile time, and the code of each fault is dead.
#ifndef SPECGATE_FAULTS
#define SPECGATE_FAULTS 1
#endif

class FaultSet {
 public:
  bool has(Fault fault) const { return SPECGATE_FAULTS && bits_.test(static_cast<size_t>(fault)); }
  FaultSet& add(Fault fault) {
    bits_.set(static_cast<size_t>(fault));
    return *this;
  }
  bool empty() const { return bits_.none(); }

 private:
  std::bitset<static_cast<size_t>(Fault::kCount)> bits_;
};

// kebab-case names, as `--inject-fault` takes them.
std::string_view fault_name(Fault fault);
std::vector<Fault> all_faults();
// Faults of EXSPEC's pool and scheduling, which EQSPEC cannot commit.
bool is_exspec_only(Fault fault);
// Faults of sampled verification, which greedy decoding cannot commit.
bool is_sampling_only(Fault fault);
// Faults of token trees, which chain decoders cannot commit, and which alone trees can.
bool is_tree_only(Fault fault);
// Throws InputError listing the known names (or saying that this build has none).
Fault fault_from_name(std::string_view name);
// Throws InputError when a fault cannot be committed by `engine` (its name, for the message):
// an EXSPEC fault on an engine that is not EXSPEC, a sampling fault with greedy decoding, a tree
// fault without trees, or with them a fault of chain rounds (EXSPEC's pool and scheduling serve
// trees too).
void require_committable(const FaultSet& faults, std::string_view engine, bool exspec_engine, bool greedy, bool trees = false);

}  // namespace specgate
