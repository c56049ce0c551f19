#include "conformance/serve/serve_engine.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <tuple>

#include "impl/decoding/decoders.h"
#include "impl/decoding/model_drafter.h"
#include "oracle/oracle.h"

namespace specgate::cli {
namespace {

DecodeOptions decode_options(const ServeEngineSettings& settings, const ServeRequest& request) {
  DecodeOptions decode;
  decode.draft_tokens = settings.draft_tokens;
  decode.max_new_tokens = request.max_new_tokens;
  decode.sampling = request.sampling;
  decode.eos_ids = settings.eos_ids;
  for (Fault fault : all_faults()) {
    if (settings.faults.has(fault) && !(is_sampling_only(fault) && request.sampling.greedy())) decode.faults.add(fault);
  }
  return decode;
}

bool same_options(const ServeRequest& a, const ServeRequest& b) {
  const SamplingParams &x = a.sampling, &y = b.sampling;
  return a.max_new_tokens == b.max_new_tokens && x.temperature == y.temperature && x.top_k == y.top_k && x.top_p == y.top_p &&
         x.min_p == y.min_p;
}

// The random stream a request samples from under the server's seed: the one its seed names,
// whatever else arrives with it, or a fresh one when it has no seed.
uint64_t random_stream(const ServeRequest& request) {
  static std::mt19937_64 fresh{std::random_device{}()};  // the decode loop's thread alone draws
  return request.seed ? *request.seed : fresh();
}

// What a request asked to be reported besides its tokens.
struct Asked {
  std::vector<int64_t> prompt;
  int64_t top_logprobs = 0, prompt_logprobs = 0;
  static Asked of(const ServeRequest& request) { return {request.prompt, request.top_logprobs, request.prompt_logprobs}; }
  bool anything() const { return top_logprobs > 0 || prompt_logprobs > 0; }
};

// What a sequence reports: log-probabilities, when asked, from the target's pass over prompt and
// tokens, as the oracle records them.
Generated reported(const ServeEngineSettings& settings, SequenceResult result, const Asked& asked) {
  Generated generated{.tokens = std::move(result.tokens), .finish_reason = result.finish_reason,
                      .rejected_drafts = result.drafted - result.accepted};
  generated.completion_tokens = static_cast<int64_t>(generated.tokens.size());
  if (asked.top_logprobs > 0)
    generated.top_logprobs = oracle_top_logprobs(*settings.target, asked.prompt, generated.tokens, asked.top_logprobs);
  if (asked.prompt_logprobs > 0) generated.prompt_logprobs = oracle_prompt_logprobs(*settings.target, asked.prompt, asked.prompt_logprobs);
  report_under_faults(settings.response_faults, generated);
  return generated;
}

class BatchServeEngine : public ServeEngine {
 public:
  explicit BatchServeEngine(const ServeEngineSettings& settings) : settings_(settings) {}

  void admit(int64_t id, ServeRequest request) override { waiting_.emplace_back(id, std::move(request)); }
  bool has_work() const override { return !waiting_.empty(); }

  std::vector<std::pair<int64_t, Generated>> step() override {
    if (waiting_.empty()) return {};
    const ServeRequest head = waiting_.front().second;
    if (settings_.engine == Engine::kOracle) return {oracle_step()};
    std::vector<std::pair<int64_t, ServeRequest>> batch;
    for (auto it = waiting_.begin(); it != waiting_.end() && static_cast<int64_t>(batch.size()) < settings_.batch_size;) {
      if (!same_options(it->second, head)) {
        ++it;
        continue;
      }
      batch.push_back(std::move(*it));
      it = waiting_.erase(it);
    }
    std::vector<SequenceRequest> sequences;
    for (const auto& [id, request] : batch) sequences.push_back({id, request.prompt, {}, random_stream(request)});
    std::optional<ModelDrafter> drafter;
    if (needs_draft(settings_.engine)) drafter.emplace(*settings_.draft);
    const DecoderSettings decoder{.decode = decode_options(settings_, head),
                                  .batch_size = static_cast<int64_t>(sequences.size())};
    std::vector<SequenceResult> results = decode_all(
        *make_decoder(decoder_kind(settings_.engine), *settings_.target, drafter ? &*drafter : nullptr, decoder), sequences);
    std::vector<std::pair<int64_t, Generated>> finished;
    for (size_t i = 0; i < results.size(); ++i) {
      finished.push_back({batch[i].first, reported(settings_, std::move(results[i]), Asked::of(batch[i].second))});
    }
    return finished;
  }

 private:
  std::pair<int64_t, Generated> oracle_step() {
    auto [id, request] = std::move(waiting_.front());
    waiting_.pop_front();
    const OracleOptions options{.max_new_tokens = request.max_new_tokens, .sampling = request.sampling,
                                .eos_ids = settings_.eos_ids, .top_logprobs = request.top_logprobs};
    OracleOutput out = oracle_generate(*settings_.target, request.prompt, options, random_stream(request));
    const auto tokens = static_cast<int64_t>(out.tokens.size());
    Generated generated{.tokens = std::move(out.tokens), .finish_reason = out.finish_reason,
                        .top_logprobs = std::move(out.top_logprobs), .completion_tokens = tokens};
    if (request.prompt_logprobs > 0)
      generated.prompt_logprobs = oracle_prompt_logprobs(*settings_.target, request.prompt, request.prompt_logprobs);
    return {id, std::move(generated)};
  }

  ServeEngineSettings settings_;
  std::deque<std::pair<int64_t, ServeRequest>> waiting_;
};

// EXSPEC fed as requests come: each joins the window at the next step with a free place, and
// leaves it as soon as it finishes. A decoder samples all its sequences alike, so there is one
// per sampling setting in use (greedy requests all share one); steps go round the decoders
// that have work.
class ExspecServeEngine : public ServeEngine {
 public:
  explicit ExspecServeEngine(const ServeEngineSettings& settings) : settings_(settings) {}

  void admit(int64_t id, ServeRequest request) override { waiting_.emplace_back(id, std::move(request)); }

  bool has_work() const override {
    if (!waiting_.empty()) return true;
    for (const auto& [key, pool] : pools_) {
      if (pool->decoder->has_work()) return true;
    }
    return false;
  }

  std::vector<std::pair<int64_t, Generated>> step() override {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      Decoder& decoder = *pool_for(it->second).decoder;
      if (decoder.free_places() == 0) {
        ++it;
        continue;
      }
      if (Asked asked = Asked::of(it->second); asked.anything()) scored_[it->first] = std::move(asked);
      decoder.admit({it->first, std::move(it->second.prompt), it->second.max_new_tokens, random_stream(it->second)});
      it = waiting_.erase(it);
    }
    std::vector<std::pair<int64_t, Generated>> finished;
    auto next = pools_.upper_bound(last_stepped_);
    for (size_t tried = 0; tried < pools_.size(); ++tried, ++next) {
      if (next == pools_.end()) next = pools_.begin();
      if (!next->second->decoder->has_work()) continue;
      last_stepped_ = next->first;
      for (SequenceResult& result : next->second->decoder->step()) {
        const int64_t id = result.sequence_index;
        const auto scored = scored_.find(id);
        finished.push_back({id, reported(settings_, std::move(result), scored == scored_.end() ? Asked{} : scored->second)});
        if (scored != scored_.end()) scored_.erase(scored);
      }
      break;
    }
    std::erase_if(pools_, [](const auto& entry) { return !entry.second->decoder->has_work(); });
    return finished;
  }

 private:
  using SamplingKey = std::tuple<double, int64_t, double, double>;

  // An EXSPEC decoder and its drafter.
  struct Pool {
    ModelDrafter drafter;
    std::unique_ptr<Decoder> decoder;
    Pool(const ServeEngineSettings& s, const DecoderSettings& settings)
        : drafter(*s.draft), decoder(make_decoder(DecoderKind::kExspec, *s.target, &drafter, settings)) {}
  };

  Pool& pool_for(const ServeRequest& request) {
    const SamplingParams& p = request.sampling;
    std::unique_ptr<Pool>& pool = pools_[SamplingKey{p.temperature, p.top_k, p.top_p, p.min_p}];
    if (!pool) {
      // A slot holds any request max_model_len allows.
      pool = std::make_unique<Pool>(
          settings_, DecoderSettings{.decode = decode_options(settings_, request),
                                     .batch_size = settings_.batch_size,
                                     .exspec = {.window = settings_.window},
                                     .sequence_capacity = cache_capacity(settings_.max_model_len, settings_.draft_tokens)});
    }
    return *pool;
  }

  ServeEngineSettings settings_;
  std::deque<std::pair<int64_t, ServeRequest>> waiting_;  // for a free place of the window
  std::map<SamplingKey, std::unique_ptr<Pool>> pools_;
  SamplingKey last_stepped_{};
  std::map<int64_t, Asked> scored_;  // admitted requests that asked for log-probabilities
};

}  // namespace

std::unique_ptr<ServeEngine> make_serve_engine(const ServeEngineSettings& settings) {
  if (settings.engine == Engine::kExspec) return std::make_unique<ExspecServeEngine>(settings);
  return std::make_unique<BatchServeEngine>(settings);
}

}  // namespace specgate::cli
