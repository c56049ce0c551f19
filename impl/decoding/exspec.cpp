#include "impl/decoding/exspec.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/speculative_step.h"
#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

// Where a sequence's cached tokens sit in the cache that holds it: slots start .. start + kept.
struct CacheSpan {
  int64_t start = 0;
  int64_t kept = 0;
};

// A sequence of the window. Between steps its row lives here; its K/V live in the pool
// (batch_row < 0) or, when it took part in the last step, still in the batch caches.
struct Member {
  Member(size_t request, Row row) : request(request), row(std::move(row)) {}

  size_t request;  // index into the requests, for the output order
  Row row;
  int64_t pool_slot = -1;
  int64_t batch_row = -1;
  int64_t waited = 0;
  CacheSpan target, draft;
};

at::Tensor long_tensor(const std::vector<int64_t>& values, c10::Device device) {
  return at::tensor(values, at::TensorOptions().dtype(at::kLong)).to(device);
}

// Where each span's K/V land in a cache whose rows are padded as given.
std::vector<RowMove> span_moves(const std::vector<CacheSpan>& spans, const std::vector<int64_t>& padding) {
  std::vector<RowMove> moves;
  for (size_t i = 0; i < spans.size(); ++i) moves.push_back({spans[i].start, padding[i], spans[i].kept, 0});
  return moves;
}

// Runs copying span i of row rows[i] to slot padding[i] of row targets[i].
std::vector<RowRun> row_runs(const std::vector<int64_t>& rows, const std::vector<int64_t>& targets,
                             const std::vector<CacheSpan>& spans, const std::vector<int64_t>& padding) {
  std::vector<RowRun> runs;
  for (size_t i = 0; i < spans.size(); ++i) runs.push_back({rows[i], targets[i], {spans[i].start, padding[i], spans[i].kept}});
  return runs;
}

class Exspec {
 public:
  Exspec(const Transformer& target, Drafter& drafter, std::span<const SequenceRequest> requests,
         const DecodeOptions& options, const ExspecOptions& exspec, DecodeStats& stats, ExspecStats& exspec_stats)
      : target_(target),
        drafter_(drafter),
        requests_(requests),
        options_(options),
        exspec_(exspec),
        stats_(stats),
        exspec_stats_(exspec_stats),
        device_(target.options().device()),
        timer_(device_, options.time_phases),
        step_(target, drafter, options, stats, timer_),
        checker_(target, options) {
    int64_t longest = 0;
    for (const SequenceRequest& request : requests) {
      TORCH_CHECK(!request.prompt.empty(), "exspec: sequence ", request.sequence_index, " has an empty prompt");
      longest = std::max<int64_t>(longest, static_cast<int64_t>(request.prompt.size()));
    }
    admission_order_.resize(requests.size());
    std::iota(admission_order_.begin(), admission_order_.end(), 0);
    if (exspec.sort_by_prompt_length) {
      std::stable_sort(admission_order_.begin(), admission_order_.end(),
                       [&](size_t a, size_t b) { return requests[a].prompt.size() < requests[b].prompt.size(); });
    }
    const int64_t capacity = cache_capacity(longest, options);
    pool_target_.emplace(target.make_cache(exspec.window, capacity));
    batch_target_.emplace(target.make_cache(exspec.batch_size, capacity));
    if (const Transformer* draft = drafter.model()) {
      pool_draft_.emplace(draft->make_cache(exspec.window, capacity));
      batch_draft_.emplace(draft->make_cache(exspec.batch_size, capacity));
    }
    for (int64_t slot = exspec.window - 1; slot >= 0; --slot) free_slots_.push_back(slot);
  }

  std::vector<SequenceResult> run() {
    admit();
    while (!window_.empty()) {
      std::vector<WindowEntry> entries;
      for (const Member& member : window_) entries.push_back({member.row.content(), member.waited});
      const BatchChoice choice =
          choose_batch(entries, exspec_.batch_size, exspec_.max_wait_steps, faults().has(Fault::kGroupMixedLengths));
      timer_.charge(stats_.other_seconds);
      const std::vector<size_t> batch = compose(choice.members, choice.grouped);
      timer_.charge(stats_.realign_seconds);
      if (options_.check_invariants) checker_.check_layout(state_, *batch_target_, drafter_.model(), batch_draft());

      const StepOutcome outcome = step_.round(state_, *batch_target_, batch_draft());
      ++steps_;
      ++exspec_stats_.steps;
      (choice.grouped ? exspec_stats_.grouped_steps : exspec_stats_.fallback_steps) += 1;
      if (options_.check_invariants) checker_.check_round(outcome.records);
      settle(batch, outcome);
      admit();
    }
    std::stable_sort(results_.begin(), results_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<SequenceResult> results;
    for (auto& [request, result] : results_) results.push_back(std::move(result));
    return results;
  }

 private:
  const FaultSet& faults() const { return options_.faults; }
  KVCache* batch_draft() { return batch_draft_ ? &*batch_draft_ : nullptr; }

  // Refills the window in admission order and runs the newcomers' prompt passes, at most B
  // prompts at a time, storing their K/V unpadded in the pool. Newcomers that finish in their
  // prompt pass leave room for more.
  void admit() {
    while (static_cast<int64_t>(window_.size()) < exspec_.window && next_admission_ < admission_order_.size())
      admit_some();
  }

  void admit_some() {
    std::vector<Member> newcomers;
    while (static_cast<int64_t>(window_.size() + newcomers.size()) < exspec_.window &&
           next_admission_ < admission_order_.size()) {
      const size_t request = admission_order_[next_admission_++];
      if (refilling_ && faults().has(Fault::kRefillLosesSequence) && !fault_done_) {
        fault_done_ = true;
        continue;
      }
      newcomers.push_back(member_for(request));
      const bool room = static_cast<int64_t>(window_.size() + newcomers.size()) < exspec_.window;
      if (refilling_ && faults().has(Fault::kRefillDuplicatesSequence) && !fault_done_ && room) {
        fault_done_ = true;
        newcomers.push_back(member_for(request));
      }
    }
    refilling_ = true;
    for (size_t first = 0; first < newcomers.size(); first += exspec_.batch_size) {
      const size_t last = std::min(newcomers.size(), first + static_cast<size_t>(exspec_.batch_size));
      prefill(std::span<Member>(newcomers).subspan(first, last - first));
    }
    for (Member& member : newcomers) {
      if (member.row.finished) {
        results_.emplace_back(member.request, finish_row(member.row, steps_, stats_));
      } else {
        window_.push_back(std::move(member));
      }
    }
    timer_.charge(stats_.other_seconds);
  }

  Member member_for(size_t request) const { return {request, Row(requests_[request], options_.sampling.seed)}; }

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
    KVCache target_cache = target_.make_cache(n, prompts.width);
    std::optional<KVCache> draft_cache;
    if (drafter_.model() != nullptr) draft_cache.emplace(drafter_.model()->make_cache(n, prompts.width));
    const StepOutcome outcome = step_.prefill(prompts, target_cache, draft_cache ? &*draft_cache : nullptr);

    std::vector<int64_t> rows, slots;
    std::vector<CacheSpan> target_spans, draft_spans;
    for (int64_t i = 0; i < n; ++i) {
      Member& member = members[i];
      member.row = std::move(prompts.rows[i]);
      if (member.row.finished) continue;
      member.pool_slot = free_slots_.back();
      free_slots_.pop_back();
      member.row.target_cached = outcome.target_keep[i].claimed;
      member.row.draft_cached = outcome.draft_keep[i].claimed;
      rows.push_back(i);
      slots.push_back(member.pool_slot);
      target_spans.push_back({outcome.old_padding[i] + outcome.target_keep[i].offset, outcome.target_keep[i].kept});
      draft_spans.push_back({outcome.old_padding[i] + outcome.draft_keep[i].offset, outcome.draft_keep[i].kept});
      member.target = {0, outcome.target_keep[i].kept};
      member.draft = {0, outcome.draft_keep[i].kept};
    }
    timer_.charge(stats_.verify_seconds);
    store(*pool_target_, target_cache, rows, target_spans, slots);
    if (draft_cache) store(*pool_draft_, *draft_cache, rows, draft_spans, slots);
    timer_.charge(stats_.realign_seconds);
  }

  // Writes rows of a batch cache, unpadded, into pool slots.
  void store(KVCache& pool, const KVCache& cache, const std::vector<int64_t>& rows, const std::vector<CacheSpan>& spans,
             std::vector<int64_t> slots) {
    if (rows.empty()) return;
    if (faults().has(Fault::kWrongSequenceKv)) std::rotate(slots.begin(), slots.begin() + 1, slots.end());
    pool.copy_rows_from(cache, row_runs(rows, slots, spans, std::vector<int64_t>(spans.size(), 0)));
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
    // Under the fault every row's K/V sit unpadded, whatever its padding in the batch.
    const bool unpadded = grouped && faults().has(Fault::kGroupMixedLengths);
    std::vector<int64_t> stay_padding, in_padding;
    for (size_t i : staying) stay_padding.push_back(unpadded ? 0 : width - window_[i].row.content());
    for (size_t i : incoming) in_padding.push_back(unpadded ? 0 : width - window_[i].row.content());
    // Under the fault, staying rows keep computing positions with the padding they had.
    std::vector<int64_t> position_padding;
    for (size_t i : batch) {
      const Member& member = window_[i];
      const bool stale = faults().has(Fault::kStalePositionIds) && member.batch_row >= 0;
      position_padding.push_back(stale ? member.row.position_padding : width - member.row.content());
    }

    layout(*batch_target_, *pool_target_, staying, incoming, stay_padding, in_padding, width, &Member::target,
           !faults().has(Fault::kKvNotShifted));
    if (batch_draft_) {
      layout(*batch_draft_, *pool_draft_, staying, incoming, stay_padding, in_padding, width, &Member::draft, true);
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
    std::vector<int64_t> rows, slots;
    std::vector<CacheSpan> target_spans, draft_spans;
    for (size_t i : leaving) {
      Member& member = window_[i];
      rows.push_back(member.batch_row);
      slots.push_back(member.pool_slot);
      target_spans.push_back(member.target);
      draft_spans.push_back(member.draft);
      member.target.start = member.draft.start = 0;
      member.batch_row = -1;
    }
    store(*pool_target_, *batch_target_, rows, target_spans, slots);
    if (batch_draft_) store(*pool_draft_, *batch_draft_, rows, draft_spans, slots);
  }

  // One cache's part of compose(): staying rows first, in their batch order, then newcomers.
  void layout(KVCache& cache, const KVCache& pool, const std::vector<size_t>& staying,
              const std::vector<size_t>& incoming, const std::vector<int64_t>& stay_padding,
              const std::vector<int64_t>& in_padding, int64_t width, CacheSpan Member::*span, bool shift) {
    const int64_t length = width - 1;
    const int64_t stay = static_cast<int64_t>(staying.size());
    if (stay > 0) {
      std::vector<int64_t> rows;
      std::vector<CacheSpan> spans;
      bool in_place = length <= cache.length();
      for (size_t b = 0; b < staying.size(); ++b) {
        const Member& member = window_[staying[b]];
        rows.push_back(member.batch_row);
        spans.push_back(shift ? member.*span : CacheSpan{stay_padding[b], (member.*span).kept});
        in_place = in_place && member.batch_row == static_cast<int64_t>(b) && spans.back().start == stay_padding[b];
      }
      if (in_place) {
        cache.reshape(stay, length);
      } else {
        if (rows.back() != stay - 1) cache.select_rows(long_tensor(rows, device_));
        cache.reshape(stay, cache.length());
        cache.shift_rows(slot_runs(span_moves(spans, stay_padding)), length);
      }
    }
    if (!incoming.empty()) {
      std::vector<int64_t> slots, rows;
      std::vector<CacheSpan> spans;
      for (size_t b = 0; b < incoming.size(); ++b) {
        const Member& member = window_[incoming[b]];
        slots.push_back(member.pool_slot);
        rows.push_back(stay + static_cast<int64_t>(b));
        spans.push_back(member.*span);
      }
      cache.reshape(stay + static_cast<int64_t>(incoming.size()), length);
      cache.copy_rows_from(pool, row_runs(slots, rows, spans, in_padding));
    }
    for (size_t b = 0; b < staying.size(); ++b) window_[staying[b]].*span = {stay_padding[b], (window_[staying[b]].*span).kept};
    for (size_t b = 0; b < incoming.size(); ++b) window_[incoming[b]].*span = {in_padding[b], (window_[incoming[b]].*span).kept};
  }

  // Takes the rows back after a round: where each member's K/V now sit, who finished, who waited.
  void settle(const std::vector<size_t>& batch, const StepOutcome& outcome) {
    for (size_t b = 0; b < batch.size(); ++b) {
      Member& member = window_[batch[b]];
      member.row = std::move(state_.rows[b]);
      member.target = {outcome.old_padding[b] + outcome.target_keep[b].offset, outcome.target_keep[b].kept};
      member.draft = {outcome.old_padding[b] + outcome.draft_keep[b].offset, outcome.draft_keep[b].kept};
      member.row.target_cached = outcome.target_keep[b].claimed;
      member.row.draft_cached = outcome.draft_keep[b].claimed;
    }
    std::vector<bool> in_batch(window_.size(), false);
    for (size_t i : batch) in_batch[i] = true;
    for (size_t i = 0; i < window_.size(); ++i) {
      Member& member = window_[i];
      member.waited = in_batch[i] ? 0 : member.waited + 1;
      exspec_stats_.longest_wait = std::max(exspec_stats_.longest_wait, member.waited);
      if (member.row.finished) {
        results_.emplace_back(member.request, finish_row(member.row, steps_, stats_));
        free_slots_.push_back(member.pool_slot);
      }
    }
    std::erase_if(window_, [](const Member& member) { return member.row.finished; });
    state_.rows.clear();
    timer_.charge(stats_.other_seconds);
  }

  const Transformer& target_;
  Drafter& drafter_;
  std::span<const SequenceRequest> requests_;
  const DecodeOptions& options_;
  const ExspecOptions& exspec_;
  DecodeStats& stats_;
  ExspecStats& exspec_stats_;
  c10::Device device_;
  PhaseTimer timer_;
  SpeculativeStep step_;
  InvariantChecker checker_;

  std::vector<size_t> admission_order_;
  size_t next_admission_ = 0;
  bool refilling_ = false;
  bool fault_done_ = false;
  std::vector<Member> window_;
  std::vector<int64_t> free_slots_;
  std::optional<KVCache> pool_target_, pool_draft_, batch_target_, batch_draft_;
  BatchState state_;
  int64_t steps_ = 0;
  std::vector<std::pair<size_t, SequenceResult>> results_;
};

}  // namespace

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

std::vector<SequenceResult> exspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            const ExspecOptions& exspec, DecodeStats* stats,
                                            ExspecStats* exspec_stats) {
  if (options.draft_tokens < 1 || options.max_new_tokens < 1)
    throw InputError("exspec: --draft-tokens and --max-new-tokens must be at least 1");
  validate(exspec);
  if (requests.empty()) return {};
  DecodeStats local;
  ExspecStats local_exspec;
  return Exspec(target, drafter, requests, options, exspec, stats != nullptr ? *stats : local,
                exspec_stats != nullptr ? *exspec_stats : local_exspec)
      .run();
}

}  // namespace specgate
