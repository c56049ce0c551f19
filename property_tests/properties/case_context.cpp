#include "property_tests/properties/case_context.h"

#include <algorithm>
#include <memory>

#include "impl/decoding/decoders.h"
#include "impl/decoding/model_drafter.h"
#include "impl/decoding/scripted_drafter.h"
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

DecodeRun CaseContext::run(std::span<const SequenceRequest> requests, const FaultSet& faults, bool check_invariants) {
  ScriptedDrafts script;
  if (case_.scripted()) {
    for (const SequenceRequest& request : requests) script.continuations[request.sequence_index] = continuation(request.prompt);
    script.script = [this](int64_t sequence, int64_t round) { return case_.scripted_accepts(sequence, round); };
    script.vocab_size = case_.target.vocab;
  }
  std::unique_ptr<Drafter> drafter;
  if (case_.draft == DraftKind::kScriptOnly) {
    drafter = std::make_unique<ScriptedDrafter>(script);
  } else {
    drafter = std::make_unique<ModelDrafter>(*draft_, case_.scripted() ? &script : nullptr);
  }

  const DecodeOptions options = this->options(faults, check_invariants);
  // EQSPEC decodes the case's requests as one batch.
  const int64_t batch_size = is_exspec(case_.decoder) ? case_.exspec.batch_size : static_cast<int64_t>(requests.size());
  const DecoderSettings settings{.decode = options, .batch_size = batch_size, .exspec = case_.exspec,
                                 .sequence_capacity = cache_capacity(requests, options)};
  const std::unique_ptr<Decoder> decoder = make_decoder(case_.decoder, target_, drafter.get(), settings);
  DecodeRun run;
  run.results = decode_all(*decoder, requests, admits_shortest_first(case_.decoder, settings));
  run.stats = decoder->stats();
  run.exspec_stats = exspec_stats_of(*decoder);
  return run;
}

std::vector<SequenceRequest> requests_for(const std::vector<std::vector<int64_t>>& prompts) {
  std::vector<SequenceRequest> requests;
  for (size_t i = 0; i < prompts.size(); ++i) requests.push_back({static_cast<int64_t>(i), prompts[i]});
  return requests;
}

}  // namespace specgate::props
