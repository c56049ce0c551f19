#include "impl/decoding/exspec.h"

#include <algorithm>
#include <optional>

#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/fault_sites.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/round.h"
#include "impl/decoding/tree_round.h"
#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

// Throws InputError for options that cannot run.
void validate_options(const DecodeOptions& options, const ExspecOptions& exspec) {
  if (options.draft_tokens < 1 || options.max_new_tokens < 1)
    throw InputError("exspec: --draft-tokens and --max-new-tokens must be at least 1");
  validate(exspec);
}

// `exspec`, once validate_options() passes it with a positive `sequence_capacity`.
const ExspecOptions& validated(const DecodeOptions& options, const ExspecOptions& exspec, int64_t sequence_capacity) {
  validate_options(options, exspec);
  TORCH_CHECK(sequence_capacity > 0, "exspec: the pool needs a positive sequence capacity");
  return exspec;
}

// A tree round adds up to the drafter's largest tree to a row's slots, as K drafts do.
DecodeOptions tree_options(DecodeOptions options, const TreeDrafter& trees) {
  options.draft_tokens = std::max<int64_t>(trees.max_nodes(), 1);
  return options;
}

// Slots a pool slot and a batch row start with: the caches grow (doubling) as their sequences
// do, so that a decoder made for one short request does not zero W x sequence_capacity slots of
// every layer first (a server makes one after every pause).
constexpr int64_t kFirstSlots = 256;

ModelCaches make_pool(const Transformer& target, const Transformer* draft, int64_t window, int64_t slots) {
  ModelCaches pool{target.make_cache(window, slots), std::nullopt};
  if (draft != nullptr) pool.draft.emplace(draft->make_cache(window, slots));
  return pool;
}

}  // namespace

class ExspecDecoder::Impl {
 public:
  // Chains drafted by `chain`, or token trees proposed by `trees` (one of them).
  Impl(const Transformer& target, Drafter* chain, TreeDrafter* trees, const DecodeOptions& options,
       const ExspecOptions& exspec, int64_t sequence_capacity)
      : drafter_(chain != nullptr ? *chain : no_drafter_),
        options_(trees != nullptr ? tree_options(options, *trees) : options),
        exspec_(validated(options_, exspec, sequence_capacity)),
        sequence_capacity_(sequence_capacity),
        timer_(target.options().device(), options.time_phases),
        round_(target, drafter_, options_, stats_, timer_),
        checker_(target, options_),
        pool_(make_pool(target, drafter_.model(), exspec.window, std::min(sequence_capacity, kFirstSlots))),
        layout_(target, drafter_.model(), exspec.batch_size, std::min(sequence_capacity, kFirstSlots), options_) {
    if (trees != nullptr) tree_round_.emplace(target, *trees, options_, stats_, timer_);
    for (int64_t slot = exspec.window - 1; slot >= 0; --slot) free_slots_.push_back(slot);
  }

  int64_t free_places() const {
    return exspec_.window - static_cast<int64_t>(window_.size() + queue_.size());
  }

  bool fits(const SequenceRequest& request) const { return cache_capacity(request, options_) <= sequence_capacity_; }
  int64_t pool_slots() const { return pool_.target.slot_capacity(); }

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
    if (options_.check_invariants)
      checker_.check_layout(layout_.state(), layout_.target_cache(), drafter_.model(), layout_.draft_cache());

    if (tree_round_) {
      tree_round_->run(layout_);
    } else {
      const std::vector<RoundRecord> records = round_.run(layout_);
      if (options_.check_invariants) checker_.check_round(records);
    }
    ++steps_;
    ++exspec_stats_.steps;
    (choice.grouped ? exspec_stats_.grouped_steps : exspec_stats_.fallback_steps) += 1;
    settle(batch, finished);
    return finished;
  }

  // A member still in the batch caches leaves its batch row behind, as a finished one does.
  void cancel(int64_t sequence_index) {
    std::erase_if(queue_, [&](const Row& row) { return row.sequence_index == sequence_index; });
    const auto cancelled = std::find_if(window_.begin(), window_.end(),
                                        [&](const Member& member) { return member.row.sequence_index == sequence_index; });
    if (cancelled == window_.end()) return;
    if (cancelled->batch_row >= 0 && rows_shift_on_cancel_under_faults(faults())) {
      for (Member& member : window_) member.batch_row -= member.batch_row > cancelled->batch_row ? 1 : 0;
    }
    free_slots_.push_back(cancelled->pool_slot);
    window_.erase(cancelled);
  }

  void visit_live(const LiveVisitor& visit) const {
    for (const Member& member : window_)
      visit(member.row.sequence_index, std::span(member.row.tokens).subspan(member.row.prompt_length));
  }

  const DecodeStats& stats() const { return stats_; }
  const ExspecStats& exspec_stats() const { return exspec_stats_; }

 private:
  // A sequence of the window. Between steps its row lives here; its K/V live in its pool slot
  // (batch_row < 0), or, when it took part in the last step, still in the batch caches, in its
  // batch row. The row's slots say where in that cache row.
  struct Member {
    explicit Member(Row row) : row(std::move(row)) {}

    Row row;
    int64_t pool_slot = -1;
    int64_t batch_row = -1;
    int64_t waited = 0;
  };

  const FaultSet& faults() const { return options_.faults; }

  BatchChoice next_batch(std::span<const WindowEntry> entries) const {
    return batch_under_faults(choose_batch(entries, exspec_.batch_size, exspec_.max_wait_steps), entries,
                              exspec_.batch_size, faults());
  }

  // Runs the queued prompt passes, at most B prompts at a time, and stores their K/V unpadded
  // in the pool. Newcomers that finish in their prompt pass leave at once.
  void prefill_queue(std::vector<SequenceResult>& finished) {
    std::vector<Member> newcomers;
    for (Row& row : queue_) newcomers.emplace_back(std::move(row));
    queue_.clear();
    for (size_t first = 0; first < newcomers.size(); first += exspec_.batch_size) {
      const size_t last = std::min(newcomers.size(), first + static_cast<size_t>(exspec_.batch_size));
      prefill(std::span<Member>(newcomers).subspan(first, last - first));
    }
    const bool others_go_on = !window_.empty() || std::any_of(newcomers.begin(), newcomers.end(), [](const Member& m) {
      return !m.row.finished;
    });
    for (Member& member : newcomers) {
      if (member.row.finished) {
        finished.push_back(finish_row(member.row, steps_, others_go_on, stats_));
      } else {
        window_.push_back(std::move(member));
      }
    }
    timer_.charge(stats_.other_seconds);
  }

  void prefill(std::span<Member> members) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<Row> rows;
    for (Member& member : members) {
      member.row.admitted_step = steps_;
      member.row.admitted_at = now;
      rows.push_back(std::move(member.row));
    }
    const StagedPrompts staged = round_.prefill(rows);

    std::vector<Row*> going_on;
    std::vector<int64_t> held, slots;
    for (size_t i = 0; i < members.size(); ++i) {
      Member& member = members[i];
      member.row = std::move(rows[i]);
      if (member.row.finished) continue;
      member.pool_slot = free_slots_.back();
      free_slots_.pop_back();
      going_on.push_back(&member.row);
      held.push_back(staged.cache_rows[i]);
      slots.push_back(member.pool_slot);
    }
    store(going_on, staged.caches, held, pool_, slots, faults());
    timer_.charge(stats_.realign_seconds);
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
    std::vector<Row> rows;
    std::vector<int64_t> held, pooled, paddings;
    for (size_t i : staying) held.push_back(window_[i].batch_row);
    for (size_t i : incoming) pooled.push_back(window_[i].pool_slot);
    for (size_t b = 0; b < batch.size(); ++b) {
      Member& member = window_[batch[b]];
      paddings.push_back(group_padding_under_faults(width - member.row.content(), grouped, faults()));
      rows.push_back(std::move(member.row));
      member.batch_row = static_cast<int64_t>(b);
    }
    layout_.compose(std::move(rows), held, &pool_, pooled, width, paddings);
    return batch;
  }

  // Writes the K/V of members leaving the batch back to their pool slots.
  void release(const std::vector<size_t>& leaving) {
    std::vector<Row*> rows;
    std::vector<int64_t> held, slots;
    for (size_t i : leaving) {
      Member& member = window_[i];
      rows.push_back(&member.row);
      held.push_back(member.batch_row);
      slots.push_back(member.pool_slot);
      member.batch_row = -1;
    }
    layout_.store(rows, held, pool_, slots);
  }

  // Takes the rows back after a round: who finished, who waited.
  void settle(const std::vector<size_t>& batch, std::vector<SequenceResult>& finished) {
    std::vector<Row> rows = layout_.take_rows();
    for (size_t b = 0; b < batch.size(); ++b) window_[batch[b]].row = std::move(rows[b]);
    std::vector<bool> in_batch(window_.size(), false);
    for (size_t i : batch) in_batch[i] = true;
    const bool others_go_on = !queue_.empty() || std::any_of(window_.begin(), window_.end(), [](const Member& m) {
      return !m.row.finished;
    });
    for (size_t i = 0; i < window_.size(); ++i) {
      Member& member = window_[i];
      member.waited = in_batch[i] ? 0 : member.waited + 1;
      exspec_stats_.longest_wait = std::max(exspec_stats_.longest_wait, member.waited);
      if (member.row.finished) {
        finished.push_back(finish_row(member.row, steps_, others_go_on, stats_));
        free_slots_.push_back(member.pool_slot);
      }
    }
    std::erase_if(window_, [](const Member& member) { return member.row.finished; });
    timer_.charge(stats_.other_seconds);
  }

  NoDrafter no_drafter_;  // with trees: the prompt pass and the layout have no draft model
  Drafter& drafter_;
  const DecodeOptions options_;
  const ExspecOptions exspec_;
  const int64_t sequence_capacity_;
  DecodeStats stats_;
  ExspecStats exspec_stats_;
  PhaseTimer timer_;
  SpeculativeRound round_;
  std::optional<TreeRound> tree_round_;
  InvariantChecker checker_;
  ModelCaches pool_;
  BatchLayout layout_;

  RefillFaults refill_faults_;
  std::vector<Row> queue_;
  std::vector<Member> window_;
  std::vector<int64_t> free_slots_;
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
    : impl_(std::make_unique<Impl>(target, &drafter, nullptr, options, exspec, sequence_capacity)) {}
ExspecDecoder::ExspecDecoder(const Transformer& target, TreeDrafter& drafter, const DecodeOptions& options,
                             const ExspecOptions& exspec, int64_t sequence_capacity)
    : impl_(std::make_unique<Impl>(target, nullptr, &drafter, options, exspec, sequence_capacity)) {}
ExspecDecoder::~ExspecDecoder() = default;
int64_t ExspecDecoder::free_places() const { return impl_->free_places(); }
bool ExspecDecoder::fits(const SequenceRequest& request) const { return impl_->fits(request); }
int64_t ExspecDecoder::pool_slots() const { return impl_->pool_slots(); }
void ExspecDecoder::admit(SequenceRequest request) { impl_->admit(std::move(request)); }
bool ExspecDecoder::has_work() const { return impl_->has_work(); }
std::vector<SequenceResult> ExspecDecoder::step() { return impl_->step(); }
void ExspecDecoder::cancel(int64_t sequence_index) { impl_->cancel(sequence_index); }
void ExspecDecoder::visit_live(const LiveVisitor& visit) const { impl_->visit_live(visit); }
const DecodeStats& ExspecDecoder::stats() const { return impl_->stats(); }
const ExspecStats& ExspecDecoder::exspec_stats() const { return impl_->exspec_stats(); }

std::vector<SequenceResult> exspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            const ExspecOptions& exspec, DecodeStats* stats,
                                            ExspecStats* exspec_stats) {
  validate_options(options, exspec);
  if (requests.empty()) return {};
  ExspecDecoder decoder(target, drafter, options, exspec, cache_capacity(requests, options));
  std::vector<SequenceResult> results = decode_all(decoder, requests, exspec.sort_by_prompt_length);
  if (stats != nullptr) *stats = decoder.stats();
  if (exspec_stats != nullptr) *exspec_stats = decoder.exspec_stats();
  return results;
}

}  // namespace specgate
