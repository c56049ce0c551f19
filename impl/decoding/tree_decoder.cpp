#include "impl/decoding/tree_decoder.h"

#include <algorithm>
#include <functional>
#include <string>

#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/common/host_transfer.h"
#include "impl/decoding/batch_layout.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/fault_sites.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/round.h"
#include "impl/decoding/tree_verification.h"

namespace specgate {
namespace {

// Moves the K/V of row `row`'s kept path to the slots right after the root's (`root_slot`), in
// order: node path[j] sits at root_slot + 1 + path[j] >= root_slot + 1 + j, so no move
// overwrites a node still to move.
void compact_path(KVCache& cache, int64_t row, int64_t root_slot, const std::vector<int64_t>& path, const TreeShape& shape,
                  const FaultSet& faults) {
  for (size_t j = 0; j < path.size(); ++j) {
    const std::optional<int64_t> kept = kept_kv_under_faults(path[j], shape, faults);
    if (!kept) continue;
    const int64_t from = root_slot + 1 + *kept, to = root_slot + 1 + static_cast<int64_t>(j);
    if (from == to) continue;
    for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
      cache.key_at(layer, row, to).copy_(cache.key_at(layer, row, from));
      cache.value_at(layer, row, to).copy_(cache.value_at(layer, row, from));
    }
  }
}

}  // namespace

// One batch from its prompt pass to its last row's last round.
class TreeDecoder::Batch final : public BatchRun {
 public:
  Batch(const Transformer& target, TreeDrafter& drafter, const TreeShape& shape, std::span<const SequenceRequest> requests,
        const DecodeOptions& options, DecodeStats& stats)
      : target_(target),
        drafter_(drafter),
        shape_(shape),
        options_(options),
        stats_(stats),
        timer_(target.options().device(), options.time_phases),
        prompt_pass_(target, no_drafter_, options, stats, timer_),
        checker_(target, options),
        layout_(target, nullptr, static_cast<int64_t>(requests.size()), cache_capacity(requests, options), options) {
    std::vector<Row> rows;
    for (const SequenceRequest& request : requests) rows.emplace_back(request, options);
    layout_.start(std::move(rows));
  }

  std::vector<SequenceResult> start() override {
    const auto now = std::chrono::steady_clock::now();
    for (Row& row : layout_.state().rows) row.admitted_at = now;
    prompt_pass_.prefill(layout_);
    return settled(leave_finished(layout_, steps_, stats_));
  }

  // Draft a tree per row, verify every tree in one target pass, keep each row's longest agreeing
  // path and the target's token after it.
  std::vector<SequenceResult> round() override {
    BatchState& state = layout_.state();
    KVCache& cache = layout_.target_cache();
    const c10::Device device = target_.options().device();
    const int64_t batch = state.batch_size(), nodes = shape_.size(), offsets = nodes + 1;
    const at::Tensor drafts = drafter_.propose(state, shape_);
    timer_.charge(stats_.draft_seconds);

    TORCH_CHECK(cache.length() == state.cache_length(), "tree round: target cache out of step with the batch");
    const int64_t root = state.cache_length();
    const at::Tensor input = at::cat({tokens_at(state, root, 1, device), upload(drafts, device)}, 1);
    const at::Tensor depths =
        upload(at::tensor(tree_offsets_under_faults(shape_.depth_offsets(), options_.faults), at::kLong), device);
    const at::Tensor positions = positions_at(state, root, 1, device) + depths.unsqueeze(0);
    const at::Tensor seen =
        at::cat({key_valid(state, root, device).unsqueeze(1).expand({batch, offsets, root}),
                 upload(tree_visibility_under_faults(shape_.visibility(), shape_, options_.faults), device)
                     .unsqueeze(0)
                     .expand({batch, offsets, offsets})},
                2);
    const at::Tensor key_positions = at::cat({positions_at(state, 0, root, device), positions}, 1);
    const at::Tensor valid = seen.logical_and(within_window(positions, key_positions, target_.config().sliding_window));
    const std::vector<TreeAcceptance> decided =
        verify_tree(target_.logits(target_.forward(input, positions, valid, &cache)), drafts, shape_, state, options_.faults);
    timer_.charge(stats_.verify_seconds);

    std::vector<int64_t> kept_nodes;
    for (int64_t i = 0; i < batch; ++i) {
      Row& row = state.rows[i];
      const std::span<const int64_t> row_drafts(drafts[i].data_ptr<int64_t>(), static_cast<size_t>(nodes));
      const TreeAcceptance& accepted = decided[i];
      compact_path(cache, i, root, accepted.path, shape_, options_.faults);
      const auto kept = static_cast<int64_t>(accepted.path.size());
      layout_.keep(i, kept, nodes);
      std::vector<int64_t> new_tokens;
      for (const int64_t node : accepted.path) new_tokens.push_back(row_drafts[node]);
      new_tokens.push_back(accepted.bonus);
      const auto appended = static_cast<int64_t>(append_tokens(row, new_tokens, options_).size());
      row.accept_lengths.push_back(appended);
      row.drafted += nodes;
      row.accepted += kept;
      stats_.drafted += nodes;
      stats_.accepted += kept;
      stats_.generated += appended;
      stats_.round_tokens += appended;
      kept_nodes.push_back(kept);
    }
    if (std::adjacent_find(kept_nodes.begin(), kept_nodes.end(), std::not_equal_to<>()) != kept_nodes.end()) {
      for (Row& row : state.rows) ++row.ragged_rounds;
    }
    ++stats_.rounds;
    stats_.row_rounds += batch;
    ++steps_;
    timer_.charge(stats_.other_seconds);
    return settled(leave_finished(layout_, steps_, stats_));
  }

  const std::vector<Row>& rows() const override { return layout_.state().rows; }

  void drop(int64_t sequence_index) override {
    std::vector<int64_t> going_on;
    const std::vector<Row>& held = rows();
    for (size_t i = 0; i < held.size(); ++i) {
      if (held[i].sequence_index != sequence_index) going_on.push_back(static_cast<int64_t>(i));
    }
    if (going_on.size() == held.size()) return;
    if (going_on.empty()) {
      layout_.take_rows();
    } else {
      layout_.realign(going_on);
    }
    settled({});
  }

 private:
  // After the rows changed: the time it took, and I1-I3 with options.check_invariants.
  std::vector<SequenceResult> settled(std::vector<SequenceResult> finished) {
    timer_.charge(stats_.realign_seconds);
    if (options_.check_invariants && !done()) checker_.check_layout(layout_.state(), layout_.target_cache(), nullptr, nullptr);
    return finished;
  }

  const Transformer& target_;
  TreeDrafter& drafter_;
  const TreeShape& shape_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  PhaseTimer timer_;
  NoDrafter no_drafter_;
  SpeculativeRound prompt_pass_;
  InvariantChecker checker_;
  BatchLayout layout_;
  int64_t steps_ = 0;
};

TreeDecoder::TreeDecoder(const Transformer& target, TreeDrafter& drafter, TreeShape shape, const DecodeOptions& options,
                         int64_t batch_size)
    : BatchDecoder(batch_size), target_(target), drafter_(drafter), shape_(std::move(shape)), options_(options) {
  TORCH_CHECK(options.max_new_tokens >= 1 && batch_size >= 1, "tree: max_new_tokens and the batch size must be >= 1");
  options_.draft_tokens = shape_.size();  // the slots a round adds: cache_capacity() counts them
}

void TreeDecoder::admit(SequenceRequest request) {
  if (request.prompt.empty())
    throw InputError("tree: sequence " + std::to_string(request.sequence_index) + " has an empty prompt");
  queue(std::move(request));
}

std::unique_ptr<BatchRun> TreeDecoder::run(std::span<const SequenceRequest> requests) {
  return std::make_unique<Batch>(target_, drafter_, shape_, requests, options_, stats_);
}

std::vector<SequenceResult> tree_generate(const Transformer& target, TreeDrafter& drafter, const TreeShape& shape,
                                          std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                          DecodeStats* stats) {
  TreeDecoder decoder(target, drafter, shape, options, std::max<int64_t>(static_cast<int64_t>(requests.size()), 1));
  std::vector<SequenceResult> results = decode_all(decoder, requests);
  if (stats != nullptr) *stats += decoder.stats();
  return results;
}

}  // namespace specgate
