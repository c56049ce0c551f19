#include "impl/decoding/tree_decoder.h"

#include <algorithm>
#include <string>

#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/decoding/batch_layout.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/round.h"
#include "impl/decoding/tree_round.h"

namespace specgate {

// One batch from its prompt pass to its last row's last round.
class TreeDecoder::Batch final : public BatchRun {
 public:
  Batch(const Transformer& target, TreeDrafter& drafter, std::span<const SequenceRequest> requests,
        const DecodeOptions& options, DecodeStats& stats)
      : options_(options),
        stats_(stats),
        timer_(target.options().device(), options.time_phases),
        prompt_pass_(target, no_drafter_, options, stats, timer_),
        tree_round_(target, drafter, options, stats, timer_),
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

  std::vector<SequenceResult> round() override {
    const RoundCounter counter(options_, stats_);
    tree_round_.run(layout_);
    ++steps_;
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

  const DecodeOptions& options_;
  DecodeStats& stats_;
  PhaseTimer timer_;
  NoDrafter no_drafter_;
  SpeculativeRound prompt_pass_;
  TreeRound tree_round_;
  InvariantChecker checker_;
  BatchLayout layout_;
  int64_t steps_ = 0;
};

TreeDecoder::TreeDecoder(const Transformer& target, TreeDrafter& drafter, const DecodeOptions& options, int64_t batch_size)
    : BatchDecoder(batch_size), target_(target), drafter_(drafter), options_(options) {
  TORCH_CHECK(options.max_new_tokens >= 1 && batch_size >= 1, "tree: max_new_tokens and the batch size must be >= 1");
  options_.draft_tokens = drafter.max_nodes();  // the slots a round adds: cache_capacity() counts them
}

void TreeDecoder::admit(SequenceRequest request) {
  if (request.prompt.empty())
    throw InputError("tree: sequence " + std::to_string(request.sequence_index) + " has an empty prompt");
  queue(std::move(request));
}

std::unique_ptr<BatchRun> TreeDecoder::run(std::span<const SequenceRequest> requests) {
  return std::make_unique<Batch>(target_, drafter_, requests, options_, stats_);
}

std::vector<SequenceResult> tree_generate(const Transformer& target, TreeDrafter& drafter,
                                          std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                          DecodeStats* stats) {
  TreeDecoder decoder(target, drafter, options, std::max<int64_t>(static_cast<int64_t>(requests.size()), 1));
  std::vector<SequenceResult> results = decode_all(decoder, requests);
  if (stats != nullptr) *stats += decoder.stats();
  return results;
}

}  // namespace specgate
