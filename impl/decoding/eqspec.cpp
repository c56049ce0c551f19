#include "impl/decoding/eqspec.h"

#include <algorithm>
#include <optional>
#include <string>

#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/decoding/fault_sites.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/round.h"
#include "impl/decoding/tree_round.h"

namespace specgate {
namespace {

std::vector<Row> rows_of(std::span<const SequenceRequest> requests, const DecodeOptions& options) {
  std::vector<Row> rows;
  for (const SequenceRequest& request : requests) rows.emplace_back(request, options);
  return rows;
}

}  // namespace

// One batch from its prompt pass to its last row's last round.
class EqspecDecoder::Batch final : public BatchRun {
 public:
  // Chains drafted by `drafter`, or, with `trees`, the token trees it proposes (`drafter`
  // then drafts nothing).
  Batch(const Transformer& target, Drafter& drafter, TreeDrafter* trees, int64_t batch_size, int64_t slot_capacity,
        const DecodeOptions& options, DecodeStats& stats)
      : drafter_(drafter),
        options_(options),
        stats_(stats),
        timer_(target.options().device(), options.time_phases),
        round_(target, drafter, options, stats, timer_),
        checker_(target, options),
        layout_(target, drafter.model(), batch_size, slot_capacity, options) {
    if (trees != nullptr) tree_round_.emplace(target, *trees, options, stats, timer_);
  }

  std::vector<SequenceResult> join(std::span<const SequenceRequest> requests) override {
    std::vector<Row> rows = rows_of(requests, options_);
    const auto now = std::chrono::steady_clock::now();
    for (Row& row : rows) {
      row.admitted_step = steps_;
      row.admitted_at = now;
    }
    const StagedPrompts staged = round_.prefill(rows);
    const bool others_go_on = !done() || std::any_of(rows.begin(), rows.end(), [](const Row& row) {
      return !row.finished;
    });
    std::vector<SequenceResult> finished;
    std::vector<Row> joining;
    std::vector<int64_t> staged_rows;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].finished) {
        finished.push_back(finish_row(rows[i], steps_, others_go_on, stats_));
      } else {
        joining.push_back(std::move(rows[i]));
        staged_rows.push_back(staged.cache_rows[i]);
      }
    }
    timer_.charge(stats_.other_seconds);
    if (!joining.empty()) layout_.admit(std::move(joining), staged.caches, staged_rows);
    timer_.charge(stats_.realign_seconds);
    check_layout();
    return finished;
  }

  std::vector<SequenceResult> round() override {
    std::vector<RoundRecord> records;
    std::vector<SequenceResult> finished;
    {
      const RoundCounter counter(options_, stats_);
      if (tree_round_) {
        tree_round_->run(layout_);
      } else {
        records = round_.run(layout_);
      }
      ++steps_;
      finished = leave_finished(layout_, steps_, stats_);
    }
    timer_.charge(stats_.realign_seconds);
    if (options_.check_invariants) checker_.check_round(records);
    check_layout();
    return finished;
  }

  const std::vector<Row>& rows() const override { return layout_.state().rows; }

  void drop(int64_t sequence_index) override {
    std::vector<Row>& rows = layout_.state().rows;
    std::vector<int64_t> going_on;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].sequence_index != sequence_index) going_on.push_back(static_cast<int64_t>(i));
    }
    if (going_on.size() == rows.size()) return;
    if (rows_shift_on_cancel_under_faults(options_.faults)) {
      std::erase_if(rows, [&](const Row& row) { return row.sequence_index == sequence_index; });
    } else if (going_on.empty()) {
      layout_.take_rows();
    } else {
      layout_.realign(going_on);
    }
    timer_.charge(stats_.realign_seconds);
    check_layout();
  }

 private:
  void check_layout() const {
    if (options_.check_invariants && !done())
      checker_.check_layout(layout_.state(), layout_.target_cache(), drafter_.model(), layout_.draft_cache());
  }

  Drafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  PhaseTimer timer_;
  SpeculativeRound round_;
  std::optional<TreeRound> tree_round_;
  InvariantChecker checker_;
  BatchLayout layout_;
  int64_t steps_ = 0;
};

EqspecDecoder::EqspecDecoder(const Transformer& target, Drafter& drafter, const DecodeOptions& options,
                             int64_t batch_size)
    : BatchDecoder(batch_size), target_(target), drafter_(drafter), options_(options) {
  TORCH_CHECK(options.max_new_tokens >= 1 && batch_size >= 1, "eqspec: max_new_tokens and the batch size must be >= 1");
}

EqspecDecoder::EqspecDecoder(const Transformer& target, TreeDrafter& drafter, const DecodeOptions& options,
                             int64_t batch_size)
    : BatchDecoder(batch_size), target_(target), drafter_(no_drafter_), tree_drafter_(&drafter), options_(options) {
  TORCH_CHECK(options.max_new_tokens >= 1 && batch_size >= 1, "eqspec: max_new_tokens and the batch size must be >= 1");
  options_.draft_tokens = drafter.max_nodes();  // the slots a round adds: cache_capacity() counts them
}

void EqspecDecoder::admit(SequenceRequest request) {
  if (request.prompt.empty())
    throw InputError("eqspec: sequence " + std::to_string(request.sequence_index) + " has an empty prompt");
  queue(std::move(request));
}

std::unique_ptr<BatchRun> EqspecDecoder::run(int64_t batch_size, std::span<const SequenceRequest> requests) {
  return std::make_unique<Batch>(target_, drafter_, tree_drafter_, batch_size, cache_capacity(requests, options_),
                                 options_, stats_);
}

std::unique_ptr<Decoder> make_nonspec_batch_decoder(const Transformer& target, const DecodeOptions& options,
                                                    int64_t batch_size) {
  static NoDrafter none;  // holds nothing, so every decoder may share it
  DecodeOptions plain = options;
  plain.draft_tokens = 0;
  return std::make_unique<EqspecDecoder>(target, none, plain, batch_size);
}

namespace {

std::vector<SequenceResult> decode_one_batch(Decoder& decoder, std::span<const SequenceRequest> requests,
                                             DecodeStats* stats) {
  std::vector<SequenceResult> results = decode_all(decoder, requests);
  if (stats != nullptr) *stats += decoder.stats();
  return results;
}

}  // namespace

std::vector<SequenceResult> eqspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            DecodeStats* stats) {
  TORCH_CHECK(options.draft_tokens >= 1 && options.max_new_tokens >= 1, "eqspec: K and max_new_tokens must be >= 1");
  if (requests.empty()) return {};
  EqspecDecoder decoder(target, drafter, options, static_cast<int64_t>(requests.size()));
  return decode_one_batch(decoder, requests, stats);
}

std::vector<SequenceResult> tree_generate(const Transformer& target, TreeDrafter& drafter,
                                          std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                          DecodeStats* stats) {
  if (requests.empty()) return {};
  EqspecDecoder decoder(target, drafter, options, static_cast<int64_t>(requests.size()));
  return decode_one_batch(decoder, requests, stats);
}

std::vector<SequenceResult> nonspec_batch_generate(const Transformer& target, std::span<const SequenceRequest> requests,
                                                   const DecodeOptions& options, DecodeStats* stats) {
  TORCH_CHECK(options.max_new_tokens >= 1, "nonspec-batch: max_new_tokens must be >= 1");
  if (requests.empty()) return {};
  const std::unique_ptr<Decoder> decoder =
      make_nonspec_batch_decoder(target, options, static_cast<int64_t>(requests.size()));
  return decode_one_batch(*decoder, requests, stats);
}

}  // namespace specgate
