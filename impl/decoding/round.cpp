// One speculative round, as EQSPEC and EXSPEC run it on a left-padded batch of B rows.
//
// The layout (batch_layout.h): row i's c_i content tokens sit right-aligned in `width` slots,
// and both caches hold the K/V of every slot but the last: the last token of each row is
// pending, the first input of the next pass.
//
// 1. Draft: the drafter proposes up to K tokens per row, k for the longest row; the others are
//    padded to k. With a model it runs K passes through the draft cache, each choice feeding
//    the next pass on the device; n-gram lookup finds each row's drafts in its own context.
// 2. Verify: one target pass over [pending, d_1 .. d_k] appends k + 1 slots to the target
//    cache; acceptance (acceptance.h) decides every row on the device and brings back, in one
//    copy, how many drafts each row keeps and its new tokens.
// 3. Accept: each row gains its kept drafts and the bonus, ending at EOS or at its
//    max_new_tokens. What each cache still holds of the row is one run of slots
//    (BatchLayout::keep): the old content and the kept drafts; the rejected drafts' slots are
//    dropped, and the bonus is the new pending token.
// 4. Realign (EQSPEC, BatchLayout::realign; EXSPEC instead lays out its next batch from these
//    runs, BatchLayout::compose): finished rows leave, the others are re-padded to the new
//    minimal width, and each cache moves every row's run with one gather per layer.
//
// Seeded faults (faults.h) bend this story only through fault_sites.h, each of whose
// functions hands back what it is given unless its fault is on.
#include "impl/decoding/round.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/common/host_transfer.h"
#include "impl/decoding/acceptance.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/fault_sites.h"
#include "impl/decoding/prompt_pass.h"
#include "impl/model/transformer.h"
#include "impl/sampling/inverse_cdf.h"

namespace specgate {
namespace {

bool is_eos(const DecodeOptions& options, int64_t token) {
  return std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end();
}

// The positions of a verification pass over [pending, d_1 .. d_k] that acceptance reads, as
// indices into its B x (k + 1): each row's pending token and its own drafts, not the padding
// after them (whose MLP and head the pass then skips); undefined where no row is padded.
at::Tensor read_positions(const DraftProposal& proposal, int64_t k, c10::Device device) {
  const std::vector<int64_t> lengths = proposal.row_lengths();
  std::vector<int64_t> read;
  for (size_t row = 0; row < lengths.size(); ++row) {
    for (int64_t t = 0; t <= lengths[row]; ++t) read.push_back(static_cast<int64_t>(row) * (k + 1) + t);
  }
  if (read.size() == lengths.size() * static_cast<size_t>(k + 1)) return at::Tensor();
  return upload(at::tensor(read), device);
}

// The pass's logits [B, k + 1, V] at the positions read, zeros at the others.
at::Tensor logits_read(const Transformer& model, const at::Tensor& hidden, const at::Tensor& read) {
  if (!read.defined()) return model.logits(hidden);
  const int64_t batch = hidden.size(0), steps = hidden.size(1);
  const at::Tensor read_logits = model.logits(hidden.reshape({batch * steps, hidden.size(2)}).index_select(0, read));
  return at::zeros({batch * steps, read_logits.size(1)}, read_logits.options())
      .index_copy_(0, read, read_logits)
      .view({batch, steps, read_logits.size(1)});
}

}  // namespace

StagedPrompts SpeculativeRound::prefill(std::vector<Row>& rows) {
  const c10::Device device = target_.options().device();
  timer_.charge(stats_.other_seconds);
  const PromptPacking packing(rows);
  std::optional<KVCache> draft_cache;
  if (const Transformer* draft = drafter_.model()) draft_cache.emplace(prompt_pass(*draft, rows, packing).cache);
  timer_.charge(stats_.draft_seconds);

  PromptPass pass = prompt_pass(target_, rows, packing);
  const at::Tensor logits = target_.logits(pass.last_hidden);  // [n, V]
  at::Tensor first = logits.argmax(-1);
  const bool all_greedy = std::all_of(rows.begin(), rows.end(), [](const Row& row) { return row.sampling.greedy(); });
  if (!all_greedy) {
    const int64_t n = static_cast<int64_t>(rows.size());
    at::Tensor uniforms = at::empty({n}, at::TensorOptions().dtype(at::kDouble));
    at::Tensor greedy = at::empty({n}, at::TensorOptions().dtype(at::kBool));
    std::vector<SamplingParams> sampling;
    for (int64_t i = 0; i < n; ++i) {
      Row& row = rows[i];
      greedy.data_ptr<bool>()[i] = row.sampling.greedy();
      uniforms.data_ptr<double>()[i] = row.sampling.greedy() ? 0.0 : row.rng.uniform();
      sampling.push_back(row.sampling);
    }
    const at::Tensor sampled = sample_tokens(sampling_distribution_under_faults(logits, sampling, options_.faults),
                                             upload(uniforms, device));
    first = at::where(upload(greedy, device), first, sampled);
  }
  const at::Tensor first_tokens = download(first);
  timer_.charge(stats_.verify_seconds);

  StagedPrompts staged{ModelCaches{std::move(pass.cache), std::move(draft_cache)}, {}};
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& row = rows[i];
    const SlotRun& run = packing.runs[i];
    row.target_slots = row.draft_slots = {run.first, run.count};
    staged.cache_rows.push_back(run.row);
    stats_.generated += static_cast<int64_t>(append_tokens(row, {first_tokens.data_ptr<int64_t>()[i]}, options_).size());
  }
  return staged;
}

std::vector<RoundRecord> SpeculativeRound::run(BatchLayout& batch_layout) {
  BatchState& state = batch_layout.state();
  KVCache& target_cache = batch_layout.target_cache();
  const int64_t width = state.width, batch = state.batch_size();
  const c10::Device device = target_.options().device();
  const FaultSet& faults = options_.faults;

  // 1. Draft: up to K tokens a row; the round verifies as many positions as the longest row drafted.
  DraftProposal proposal = options_.draft_tokens > 0
                               ? drafter_.propose(state, options_.draft_tokens, options_, batch_layout.draft_cache())
                               : DraftProposal{};
  proposal.tokens = proposal.tokens.defined()
                        ? upload(proposal.tokens, device)
                        : at::empty({batch, 0}, at::TensorOptions().dtype(at::kLong).device(device));
  const int64_t k = proposal.tokens.size(1);
  timer_.charge(stats_.draft_seconds);

  // 2. Verify.
  TORCH_CHECK(target_cache.length() == state.cache_length(), "round: target cache out of step with the batch");
  const int64_t pending = state.cache_length();
  const at::Tensor input = at::cat({tokens_at(state, pending, 1, device), proposal.tokens}, 1);
  const at::Tensor positions = verified_positions_under_faults(positions_at(state, pending, k + 1, device), faults);
  const at::Tensor valid = mask_under_faults(key_valid(state, width + k, device), faults, /*fed_slot=*/pending);
  const at::Tensor read = read_positions(proposal, k, device);
  const at::Tensor hidden = target_.forward(input, positions, valid, &target_cache, read);
  std::vector<RowDecision> decisions = verify_drafts(logits_read(target_, hidden, read), proposal, state, options_);
  timer_.charge(stats_.verify_seconds);

  // 3. Accept.
  std::vector<RoundRecord> records;
  for (int64_t i = 0; i < batch; ++i) {
    Row& row = state.rows[i];
    RoundRecord& record = records.emplace_back(RoundRecord{row.sequence_index, row.generated(), row.max_new_tokens,
                                                           row.sampling.greedy(), std::move(decisions[i]), {}});
    const RowDecision& decision = record.decision;
    const int64_t a = decision.accepted, drafted = static_cast<int64_t>(decision.drafted.size());
    batch_layout.keep(i, a, k);
    record.appended = append_tokens(row, decision.new_tokens, options_);
    row.accept_lengths.push_back(static_cast<int64_t>(record.appended.size()));
    row.drafted += drafted;
    row.accepted += a;
    stats_.drafted += drafted;
    stats_.accepted += a;
    stats_.generated += static_cast<int64_t>(record.appended.size());
    stats_.round_tokens += static_cast<int64_t>(record.appended.size());
  }
  const bool ragged = std::any_of(records.begin(), records.end(), [&](const RoundRecord& record) {
    return record.decision.accepted != records.front().decision.accepted;
  });
  if (ragged) {
    for (Row& row : state.rows) ++row.ragged_rounds;
  }
  stats_.rounds += 1;
  stats_.row_rounds += batch;
  timer_.charge(stats_.other_seconds);
  return records;
}

std::vector<int64_t> append_tokens(Row& row, const std::vector<int64_t>& tokens, const DecodeOptions& options) {
  const auto eos = [&](int64_t token) { return is_eos(options, token); };
  const size_t through_eos = std::find_if(tokens.begin(), tokens.end(), eos) - tokens.begin() + 1;
  const size_t room = static_cast<size_t>(std::max<int64_t>(row.max_new_tokens - row.generated(), 0));
  const size_t kept =
      kept_tokens_under_faults(std::min({through_eos, room, tokens.size()}), tokens.size(), options.faults);
  const std::vector<int64_t> appended(tokens.begin(), tokens.begin() + kept);
  row.tokens.insert(row.tokens.end(), appended.begin(), appended.end());
  if (!row.finished && std::any_of(appended.begin(), appended.end(), eos)) {
    row.finished = true;
    row.finish_reason = FinishReason::kEos;
  }
  if (!row.finished && row.generated() >= row.max_new_tokens) {
    row.finished = true;
    row.finish_reason = FinishReason::kLength;
  }
  return appended;
}

std::vector<SequenceResult> leave_finished(BatchLayout& batch, int64_t step, DecodeStats& stats) {
  std::vector<SequenceResult> finished;
  std::vector<int64_t> going_on;
  std::vector<Row>& rows = batch.state().rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].finished) going_on.push_back(static_cast<int64_t>(i));
  }
  for (Row& row : rows) {
    if (row.finished) finished.push_back(finish_row(row, step, !going_on.empty(), stats));
  }
  if (going_on.empty()) {
    batch.take_rows();
  } else {
    batch.realign(going_on);
  }
  return finished;
}

SequenceResult finish_row(Row& row, int64_t step, bool others_go_on, DecodeStats& stats) {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - row.admitted_at;
  stats.latencies.push_back({row.sequence_index, step - row.admitted_step, elapsed.count()});
  return {.sequence_index = row.sequence_index,
          .tokens = std::vector<int64_t>(row.tokens.begin() + row.prompt_length, row.tokens.end()),
          .finish_reason = row.finish_reason,
          .rounds = static_cast<int64_t>(row.accept_lengths.size()),
          .accept_lengths = std::move(row.accept_lengths),
          .drafted = row.drafted,
          .accepted = row.accepted,
          .ragged_rounds = row.ragged_rounds,
          .realignments = row.realignments,
          .finished_early = others_go_on};
}

}  // namespace specgate
