#include "impl/decoding/exspec.h"

#include <algorithm>
#include <optional>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/fault_sites.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/round.h"
#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

// A sequence of the window. Between steps its row lives here; its K/V live in the pool
// (batch_row < 0: runs of its pool slot from slot 0) or, when it took part in the last step,
// still in the batch caches (runs of its batch row).
struct Member {
  explicit Member(Row row) : row(std::move(row)) {}

  Row row;
  int64_t pool_slot = -1;
  int64_t batch_row = -1;
  int64_t waited = 0;
  SlotRun target, draft;
};

// Throws InputError for options that cannot run.
void validate_options(const DecodeOptions& options, const ExspecOptions& exspec) {
  if (options.draft_tokens < 1 || options.max_new_tokens < 1)
    throw InputError("exspec: --draft-tokens and --max-new-tokens must be at least 1");
  validate(exspec);
}

}  // namespace

class ExspecDecoder::Impl {
 public:
  Impl(const Transformer& target, Drafter& drafter, const DecodeOptions& options, const ExspecOptions& exspec,
       int64_t sequence_capacity)
      : target_(target),
        drafter_(drafter),
        options_(options),
        exspec_(exspec),
        sequence_capacity_(sequence_capacity),
        device_(target.options().device()),
        timer_(device_, options.time_phases),
        round_(target, drafter, options_, stats_, timer_),
        checker_(target, options_) {
    validate_options(options, exspec);
    TORCH_CHECK(sequence_capacity > 0, "exspec: the pool needs a positive sequence capacity");
    pool_target_.emplace(target.make_cache(exspec.window, sequence_capacity));
    batch_target_.emplace(target.make_cache(exspec.batch_size, sequence_capacity));
    if (const Transformer* draft = drafter.model()) {
      pool_draft_.emplace(draft->make_cache(exspec.window, sequence_capacity));
      batch_draft_.emplace(draft->make_cache(exspec.batch_size, sequence_capacity));
    }
    for (int64_t slot = exspec.window - 1; slot >= 0; --slot) free_slots_.push_back(slot);
  }

  int64_t free_places() const {
    return exspec_.window - static_cast<int64_t>(window_.size() + queue_.size());
  }

  bool fits(const SequenceRequest& request) const { return cache_capacity(request, options_) <= sequence_capacity_; }

  void admit(SequenceRequest request) {
    if (request.prompt.empty())
      throw InputError("exspec: sequence " + std::to_string(request.sequence_index) + " has an empty prompt");
    if (!fits(request))
      throw InputError("exspec: sequence " + std::to_string(request.sequence_index) + " needs " +
                       std::to_string(cache_capacity(request, options_)) + " cache slots, the pool holds " +
                       std::to_string(sequence_capacity_) + " per sequence");
    TORCH_CHECK(free_places() > 0, "exspec: admit() with a full window");
    for (int copies = refill_faults_.copies_under_faults(free_places(), faults()); copies > 0; --copies)
      queue_.emplace_back(Row(request, options_));
  }

  bool has_work() const { return !window_.empty() || !queue_.empty(); }

  std::vector<SequenceResult> step() {
    std::vector<SequenceResult> finished;
    if (!queue_.empty()) prefill_queue(finished);
    refill_faults_.window_started();
    if (window_.empty()) return finished;

    const RoundCounter counter(options_, stats_);
    std::vector<WindowEntry> entries;
    for (const Member& member : window_) entries.push_back({member.row.content(), member.waited});
    const BatchChoice choice = next_batch(entries);
    timer_.charge(stats_.other_seconds);
    const std::vector<size_t> batch = compose(choice.members, choice.grouped);
    timer_.charge(stats_.realign_seconds);
    if (options_.check_invariants) checker_.check_layout(state_, *batch_target_, drafter_.model(), batch_draft());

    const RoundOutcome outcome = round_.run(state_, *batch_target_, batch_draft());
    ++steps_;
    ++exspec_stats_.steps;
    (choice.grouped ? exspec_stats_.grouped_steps : exspec_stats_.fallback_steps) += 1;
    if (options_.check_invariants) checker_.check_round(outcome.records);
    settle(batch, outcome, finished);
    return finished;
  }

  const DecodeStats& stats() const { return stats_; }
  const ExspecStats& exspec_stats() const { return exspec_stats_; }

 private:
  const FaultSet& faults() const { return options_.faults; }

  BatchChoice next_batch(std::span<const WindowEntry> entries) const {
    return batch_under_faults(choose_batch(entries, exspec_.batch_size, exspec_.max_wait_steps), entries,
                              exspec_.batch_size, faults());
  }

  KVCache* batch_draft() { return batch_draft_ ? &*batch_draft_ : nullptr; }

  // Runs the queued prompt passes, at most B prompts at a time, through the batch caches
  // (whose rows go back to the pool first) and stores their K/V unpadded in the pool.
  // Newcomers that finish in their prompt pass leave at once.
  void prefill_queue(std::vector<SequenceResult>& finished) {
    std::vector<size_t> in_batch;
    for (size_t i = 0; i < window_.size(); ++i) {
      if (window_[i].batch_row >= 0) in_batch.push_back(i);
    }
    release(in_batch);
    std::vector<Member> newcomers;
    for (Row& row : queue_) newcomers.emplace_back(std::move(row));
    queue_.clear();
    for (size_t first = 0; first < newcomers.size(); first += exspec_.batch_size) {
      const size_t last = std::min(newcomers.size(), first + static_cast<size_t>(exspec_.batch_size));
      prefill(std::span<Member>(newcomers).subspan(first, last - first));
    }
    for (Member& member : newcomers) {
      if (member.row.finished) {
        finished.push_back(finish_row(member.row, steps_, stats_));
      } else {
        window_.push_back(std::move(member));
      }
    }
    timer_.charge(stats_.other_seconds);
  }

  void prefill(std::span<Member> members) {
    BatchState prompts;
    for (Member& member : members) {
      prompts.width = std::max(prompts.width, member.row.content());
      prompts.rows.push_back(std::move(member.row));
    }
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < prompts.rows.size(); ++i) {
      prompts.rows[i].position_padding = prompts.padding(i);
      prompts.rows[i].admitted_step = steps_;
      prompts.rows[i].admitted_at = now;
    }
    const int64_t n = prompts.batch_size();
    batch_target_->reshape(n, 0);
    if (batch_draft_) batch_draft_->reshape(n, 0);
    const RoundOutcome outcome = round_.prefill(prompts, *batch_target_, batch_draft());

    std::vector<SlotRun> target_runs, draft_runs;
    std::vector<int64_t> slots;
    for (int64_t i = 0; i < n; ++i) {
      Member& member = members[i];
      member.row = std::move(prompts.rows[i]);
      if (member.row.finished) continue;
      member.pool_slot = free_slots_.back();
      free_slots_.pop_back();
      slots.push_back(member.pool_slot);
      target_runs.push_back(outcome.target_kept[i]);
      draft_runs.push_back(outcome.draft_kept[i]);
      member.target = {member.pool_slot, 0, outcome.target_kept[i].count};
      member.draft = {member.pool_slot, 0, outcome.draft_kept[i].count};
    }
    timer_.charge(stats_.verify_seconds);
    store(*pool_target_, *batch_target_, target_runs, slots);
    if (batch_draft_) store(*pool_draft_, *batch_draft_, draft_runs, slots);
    timer_.charge(stats_.realign_seconds);
  }

  // Writes runs of a batch cache, unpadded, into pool slots.
  void store(KVCache& pool, const KVCache& cache, const std::vector<SlotRun>& runs, const std::vector<int64_t>& slots) {
    if (runs.empty()) return;
    pool.scatter(cache, runs, pool_slots_under_faults(slots, faults()));
  }

  // Lays out the chosen members as the batch: members that leave the batch go back to the
  // pool, those that stay are moved in place (not at all when their slots do not change),
  // newcomers are read from the pool. Returns the window index of each batch row.
  std::vector<size_t> compose(const std::vector<size_t>& chosen, bool grouped) {
    std::vector<bool> is_chosen(window_.size(), false);
    for (size_t i : chosen) is_chosen[i] = true;
    std::vector<size_t> leaving, staying, incoming;
    for (size_t i = 0; i < window_.size(); ++i) {
      if (window_[i].batch_row >= 0 && !is_chosen[i]) leaving.push_back(i);
    }
    for (size_t i : chosen) (window_[i].batch_row >= 0 ? staying : incoming).push_back(i);
    std::sort(staying.begin(), staying.end(),
              [&](size_t a, size_t b) { return window_[a].batch_row < window_[b].batch_row; });
    release(leaving);

    std::vector<size_t> batch = staying;
    batch.insert(batch.end(), incoming.begin(), incoming.end());
    int64_t width = 0;
    for (size_t i : batch) width = std::max(width, window_[i].row.content());
    const auto padding = [&](size_t i) {
      return group_padding_under_faults(width - window_[i].row.content(), grouped, faults());
    };
    std::vector<int64_t> stay_padding, in_padding;
    for (size_t i : staying) stay_padding.push_back(padding(i));
    for (size_t i : incoming) in_padding.push_back(padding(i));
    std::vector<int64_t> position_padding;
    for (size_t i : batch) {
      const Member& member = window_[i];
      const int64_t fresh = width - member.row.content();
      position_padding.push_back(member.batch_row >= 0
                                     ? position_padding_under_faults(fresh, member.row.position_padding, faults())
                                     : fresh);
    }

    layout(*batch_target_, *pool_target_, staying, incoming, stay_padding, in_padding, width, &Member::target, true);
    if (batch_draft_) {
      layout(*batch_draft_, *pool_draft_, staying, incoming, stay_padding, in_padding, width, &Member::draft, false);
    }

    state_.rows.clear();
    state_.width = width;
    for (size_t b = 0; b < batch.size(); ++b) {
      Member& member = window_[batch[b]];
      member.row.position_padding = position_padding[b];
      member.batch_row = static_cast<int64_t>(b);
      state_.rows.push_back(std::move(member.row));
    }
    return batch;
  }

  // Writes the K/V of members leaving the batch back to their pool slots.
  void release(const std::vector<size_t>& leaving) {
    if (leaving.empty()) return;
    std::vector<SlotRun> target_runs, draft_runs;
    std::vector<int64_t> slots;
    for (size_t i : leaving) {
      Member& member = window_[i];
      slots.push_back(member.pool_slot);
      target_runs.push_back(member.target);
      draft_runs.push_back(member.draft);
      member.target = {member.pool_slot, 0, member.target.count};
      member.draft = {member.pool_slot, 0, member.draft.count};
      member.batch_row = -1;
    }
    store(*pool_target_, *batch_target_, target_runs, slots);
    if (batch_draft_) store(*pool_draft_, *batch_draft_, draft_runs, slots);
  }

  // One cache's part of compose(): staying rows first, in their batch order (not moved at all
  // when none changes place), then newcomers from the pool.
  void layout(KVCache& cache, const KVCache& pool, const std::vector<size_t>& staying,
              const std::vector<size_t>& incoming, const std::vector<int64_t>& stay_padding,
              const std::vector<int64_t>& in_padding, int64_t width, SlotRun Member::*run, bool target) {
    const int64_t length = cached_slots(width);
    const int64_t stay = static_cast<int64_t>(staying.size());
    if (stay > 0) {
      std::vector<SlotRun> runs;
      for (size_t b = 0; b < staying.size(); ++b) {
        const SlotRun& held = window_[staying[b]].*run;
        runs.push_back(target ? source_under_faults(held, stay_padding[b], faults()) : held);
      }
      cache.relayout(runs, stay_padding, length);
    }
    if (!incoming.empty()) {
      std::vector<SlotRun> runs;
      for (size_t i : incoming) runs.push_back(window_[i].*run);
      cache.reshape(stay + static_cast<int64_t>(incoming.size()), length);
      cache.gather(pool, runs, in_padding, stay);
    }
    for (size_t b = 0; b < staying.size(); ++b) {
      SlotRun& held = window_[staying[b]].*run;
      held = {static_cast<int64_t>(b), stay_padding[b], held.count};
    }
    for (size_t b = 0; b < incoming.size(); ++b) {
      SlotRun& held = window_[incoming[b]].*run;
      held = {stay + static_cast<int64_t>(b), in_padding[b], held.count};
    }
  }

  // Takes the rows back after a round: where each member's K/V now sit, who finished, who waited.
  void settle(const std::vector<size_t>& batch, const RoundOutcome& outcome, std::vector<SequenceResult>& finished) {
    for (size_t b = 0; b < batch.size(); ++b) {
      Member& member = window_[batch[b]];
      member.row = std::move(state_.rows[b]);
      member.target = outcome.target_kept[b];
      member.draft = outcome.draft_kept[b];
    }
    std::vector<bool> in_batch(window_.size(), false);
    for (size_t i : batch) in_batch[i] = true;
    for (size_t i = 0; i < window_.size(); ++i) {
      Member& member = window_[i];
      member.waited = in_batch[i] ? 0 : member.waited + 1;
      exspec_stats_.longest_wait = std::max(exspec_stats_.longest_wait, member.waited);
      if (member.row.finished) {
        finished.push_back(finish_row(member.row, steps_, stats_));
        free_slots_.push_back(member.pool_slot);
      }
    }
    std::erase_if(window_, [](const Member& member) { return member.row.finished; });
    state_.rows.clear();
    timer_.charge(stats_.other_seconds);
  }

  const Transformer& target_;
  Drafter& drafter_;
  const DecodeOptions options_;
  const ExspecOptions exspec_;
  const int64_t sequence_capacity_;
  DecodeStats stats_;
  ExspecStats exspec_stats_;
  c10::Device device_;
  PhaseTimer timer_;
  SpeculativeRound round_;
  InvariantChecker checker_;

  RefillFaults refill_faults_;
  std::vector<Row> queue_;
  std::vector<Member> window_;
  std::vector<int64_t> free_slots_;
  std::optional<KVCache> pool_target_, pool_draft_, batch_target_, batch_draft_;
  BatchState state_;
  int64_t steps_ = 0;
};

void validate(const ExspecOptions& exspec) {
  if (exspec.batch_size < 1 || exspec.window < exspec.batch_size)
    throw InputError("exspec: --window (" + std::to_string(exspec.window) + ") must be at least --batch-size (" +
                     std::to_string(exspec.batch_size) + "), which must be at least 1");
  const int64_t feasible = smallest_feasible_wait(exspec.window, exspec.batch_size);
  if (exspec.max_wait_steps > 0 && exspec.max_wait_steps < feasible)
    throw InputError("exspec: --max-wait " + std::to_string(exspec.max_wait_steps) + " cannot be honoured with window " +
                     std::to_string(exspec.window) + " and batch size " + std::to_string(exspec.batch_size) +
                     " (at least " + std::to_string(feasible) + ")");
}

ExspecDecoder::ExspecDecoder(const Transformer& target, Drafter& drafter, const DecodeOptions& options,
                             const ExspecOptions& exspec, int64_t sequence_capacity)
    : impl_(std::make_unique<Impl>(target, drafter, options, exspec, sequence_capacity)) {}
ExspecDecoder::~ExspecDecoder() = default;
int64_t ExspecDecoder::free_places() const { return impl_->free_places(); }
bool ExspecDecoder::fits(const SequenceRequest& request) const { return impl_->fits(request); }
void ExspecDecoder::admit(SequenceRequest request) { impl_->admit(std::move(request)); }
bool ExspecDecoder::has_work() const { return impl_->has_work(); }
std::vector<SequenceResult> ExspecDecoder::step() { return impl_->step(); }
const DecodeStats& ExspecDecoder::stats() const { return impl_->stats(); }
const ExspecStats& ExspecDecoder::exspec_stats() const { return impl_->exspec_stats(); }

int64_t pool_capacity(std::span<const SequenceRequest> requests, const DecodeOptions& options) {
  int64_t capacity = 0;
  for (const SequenceRequest& request : requests) capacity = std::max(capacity, cache_capacity(request, options));
  return capacity;
}


std::vector<SequenceResult> exspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            const ExspecOptions& exspec, DecodeStats* stats,
                                            ExspecStats* exspec_stats) {
  validate_options(options, exspec);
  if (requests.empty()) return {};
  ExspecDecoder decoder(target, drafter, options, exspec, pool_capacity(requests, options));
  std::vector<SequenceResult> results = decode_all(decoder, requests, exspec.sort_by_prompt_length);
  if (stats != nullptr) *stats = decoder.stats();
  if (exspec_stats != nullptr) *exspec_stats = decoder.exspec_stats();
  return results;
}

}  // namespace specgate
