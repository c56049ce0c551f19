#include "property_tests/properties/case_context.h"

#include <algorithm>
#include <memory>

#include "impl/decoding/decoders.h"
#include "impl/decoding/model_drafter.h"
#include "impl/decoding/ngram_drafter.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/decoding/tree_drafter.h"
#include "oracle/oracle.h"
#include "property_tests/properties/case_models.h"

namespace specgate::props {

CaseContext::CaseContext(const DecodeCase& decode_case)
    : case_(decode_case),
      target_(build_target(decode_case.target)),
      draft_(build_draft(decode_case.target, target_, decode_case.draft, decode_case.draft_seed, decode_case.draft_noise)) {
  if (case_.eos) {
    const std::vector<int64_t>& run = continuation(case_.prompts.at(case_.eos->row));
    eos_ids_ = {run.at(case_.eos->step)};
  }
}

const std::vector<int64_t>& CaseContext::continuation(const std::vector<int64_t>& prompt) {
  auto found = continuations_.find(prompt);
  if (found == continuations_.end()) {
    const OracleOptions options{.max_new_tokens = case_.max_new_tokens + case_.k + 1, .top_logprobs = 0};
    found = continuations_.emplace(prompt, oracle_generate(target_, prompt, options, 0).tokens).first;
  }
  return found->second;
}

std::vector<int64_t> CaseContext::oracle_output(const std::vector<int64_t>& prompt) {
  const std::vector<int64_t>& run = continuation(prompt);
  std::vector<int64_t> out;
  for (int64_t token : run) {
    if (static_cast<int64_t>(out.size()) == case_.max_new_tokens) break;
    out.push_back(token);
    if (is_eos(token)) break;
  }
  return out;
}

bool CaseContext::is_eos(int64_t token) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
}

DecodeOptions CaseContext::options(const FaultSet& faults, bool check_invariants) const {
  DecodeOptions o;
  o.draft_tokens = case_.k;
  o.max_new_tokens = case_.max_new_tokens;
  o.sampling = case_.sampling;
  o.eos_ids = eos_ids_;
  o.check_invariants = check_invariants;
  o.faults = faults;
  return o;
}

// The case's decoder with what it drafts with, which must outlive it.
struct CaseContext::CaseDecoder {
  ScriptedDrafts script;
  std::unique_ptr<Drafter> drafter;
  std::unique_ptr<TreeDrafter> tree_drafter;
  DecoderSettings settings;
  std::unique_ptr<Decoder> decoder;
};

std::unique_ptr<CaseContext::CaseDecoder> CaseContext::make_decoder(std::span<const SequenceRequest> requests,
                                                                    const FaultSet& faults, bool check_invariants) {
  auto made = std::make_unique<CaseDecoder>();
  ScriptedDrafts& script = made->script;
  if (case_.scripted()) {
    for (const SequenceRequest& request : requests) script.continuations[request.sequence_index] = continuation(request.prompt);
    script.script = [this](int64_t sequence, int64_t round) { return case_.scripted_accepts(sequence, round); };
    script.vocab_size = case_.target.vocab;
  }
  if (case_.draft == DraftKind::kScriptOnly) {
    made->drafter = std::make_unique<ScriptedDrafter>(
        script, [this](int64_t sequence, int64_t round) { return case_.draft_length(sequence, round); });
  } else if (case_.draft == DraftKind::kNgram) {
    made->drafter = std::make_unique<NgramDrafter>(NgramOptions{.min_n = 1, .max_n = case_.ngram_max});
  } else {
    made->drafter = std::make_unique<ModelDrafter>(*draft_, case_.scripted() ? &script : nullptr);
  }
  DecodeOptions options = this->options(faults, check_invariants);
  std::vector<TreeShape> shapes;
  for (const std::vector<int64_t>& parents : case_.trees) {
    options.draft_tokens = std::max(options.draft_tokens, max_tree_nodes(shapes.emplace_back(parents)));
  }
  // EQSPEC decodes the case's requests as one batch.
  const int64_t batch_size = is_exspec(case_.decoder) ? case_.exspec.batch_size : static_cast<int64_t>(requests.size());
  made->settings = {.decode = options, .batch_size = batch_size, .exspec = case_.exspec,
                    .sequence_capacity = cache_capacity(requests, options)};
  if (!shapes.empty()) {
    made->tree_drafter = std::make_unique<ScriptedTreeDrafter>(script, std::move(shapes));
    made->decoder = specgate::make_tree_decoder(case_.decoder, target_, *made->tree_drafter, made->settings);
  } else {
    made->decoder = specgate::make_decoder(case_.decoder, target_, made->drafter.get(), made->settings);
  }
  return made;
}

DecodeRun CaseContext::run(std::span<const SequenceRequest> requests, const FaultSet& faults, bool check_invariants) {
  const std::unique_ptr<CaseDecoder> made = make_decoder(requests, faults, check_invariants);
  DecodeRun run;
  run.results = decode_all(*made->decoder, requests, admits_shortest_first(case_.decoder, made->settings));
  run.stats = made->decoder->stats();
  run.exspec_stats = exspec_stats_of(*made->decoder);
  return run;
}

std::vector<std::pair<int64_t, SequenceResult>> CaseContext::run_cancelling(std::span<const SequenceRequest> requests,
                                                                            const FaultSet& faults,
                                                                            const std::map<int64_t, int64_t>& cancel_at) {
  const std::unique_ptr<CaseDecoder> made = make_decoder(requests, faults, /*check_invariants=*/true);
  Decoder& decoder = *made->decoder;
  const std::vector<SequenceRequest> order = admits_shortest_first(case_.decoder, made->settings)
                                                 ? shortest_prompt_first(requests)
                                                 : std::vector<SequenceRequest>(requests.begin(), requests.end());
  std::vector<std::pair<int64_t, SequenceResult>> finished;
  int64_t step = 0;
  for (size_t next = 0; next < order.size() || decoder.has_work(); ++step) {
    for (; next < order.size() && decoder.free_places() > 0; ++next) {
      const auto cancelled = cancel_at.find(order[next].sequence_index);
      if (cancelled == cancel_at.end() || cancelled->second > step) decoder.admit(order[next]);  // else it left waiting
    }
    for (const auto& [sequence, at] : cancel_at) {
      if (at == step) decoder.cancel(sequence);
    }
    for (SequenceResult& result : decoder.step()) finished.emplace_back(step, std::move(result));
  }
  return finished;
}

std::vector<SequenceRequest> requests_for(const std::vector<std::vector<int64_t>>& prompts) {
  std::vector<SequenceRequest> requests;
  for (size_t i = 0; i < prompts.size(); ++i) requests.push_back({static_cast<int64_t>(i), prompts[i]});
  return requests;
}

}  // namespace specgate::props
