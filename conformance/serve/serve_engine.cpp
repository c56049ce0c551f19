#include "conformance/serve/serve_engine.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include "impl/decoding/decoders.h"
#include "impl/decoding/model_drafter.h"
#include "oracle/oracle.h"

namespace specgate::cli {
namespace {

// The random stream a request samples from under the server's seed: the one its seed names,
// whatever else arrives with it, or a fresh one when it has no seed.
uint64_t random_stream(const ServeRequest& request) {
  static std::mt19937_64 fresh{std::random_device{}()};  // the decode loop's thread alone draws
  return request.seed ? *request.seed : fresh();
}

SequenceRequest sequence(int64_t id, const ServeRequest& request) {
  return {.sequence_index = id, .prompt = request.prompt, .max_new_tokens = request.max_new_tokens,
          .random_stream = random_stream(request), .sampling = request.sampling};
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
  Generated generated{.sequence = std::move(result)};
  SequenceResult& sequence = generated.sequence;
  generated.completion_tokens = static_cast<int64_t>(sequence.tokens.size());
  if (asked.top_logprobs > 0) {
    GeneratedLogprobs logprobs = oracle_generated_logprobs(*settings.target, asked.prompt, sequence.tokens, asked.top_logprobs);
    sequence.top_logprobs = std::move(logprobs.top);
    generated.chosen_logprobs = std::move(logprobs.chosen);
  }
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
    if (settings_.engine == Engine::kOracle) return {oracle_step()};
    std::vector<std::pair<int64_t, ServeRequest>> batch;
    while (!waiting_.empty() && static_cast<int64_t>(batch.size()) < settings_.decoder.batch_size) {
      batch.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
    std::vector<SequenceRequest> sequences;
    for (const auto& [id, request] : batch) sequences.push_back(sequence(id, request));
    std::optional<ModelDrafter> drafter;
    if (needs_draft(settings_.engine)) drafter.emplace(*settings_.draft);
    const DecoderSettings decoder{.decode = settings_.decoder.decode, .batch_size = static_cast<int64_t>(sequences.size())};
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
                                .eos_ids = settings_.decoder.decode.eos_ids};
    SequenceResult sequence = oracle_generate(*settings_.target, request.prompt, options, random_stream(request));
    sequence.sequence_index = id;
    return {id, reported(settings_, std::move(sequence), Asked::of(request))};
  }

  ServeEngineSettings settings_;
  std::deque<std::pair<int64_t, ServeRequest>> waiting_;
};

// EXSPEC fed as requests come: each joins the window at the next step with a free place, and
// leaves it as soon as it finishes. One pool holds every request, each sampled as it asked; it
// lives while there is work, and the next request after a pause gets a fresh one.
class ExspecServeEngine : public ServeEngine {
 public:
  explicit ExspecServeEngine(const ServeEngineSettings& settings) : settings_(settings) {}

  void admit(int64_t id, ServeRequest request) override { waiting_.emplace_back(id, std::move(request)); }

  bool has_work() const override { return !waiting_.empty() || (pool_ && pool_->decoder->has_work()); }

  std::vector<std::pair<int64_t, Generated>> step() override {
    std::vector<std::pair<int64_t, Generated>> finished;
    if (!has_work()) return finished;
    if (!pool_) pool_ = std::make_unique<Pool>(settings_);
    Decoder& decoder = *pool_->decoder;
    while (!waiting_.empty() && decoder.free_places() > 0) {
      auto& [id, request] = waiting_.front();
      if (Asked asked = Asked::of(request); asked.anything()) scored_[id] = std::move(asked);
      decoder.admit(sequence(id, request));
      waiting_.pop_front();
    }
    for (SequenceResult& result : decoder.step()) {
      const int64_t id = result.sequence_index;
      const auto scored = scored_.find(id);
      finished.push_back({id, reported(settings_, std::move(result), scored == scored_.end() ? Asked{} : scored->second)});
      if (scored != scored_.end()) scored_.erase(scored);
    }
    if (!decoder.has_work()) pool_.reset();
    return finished;
  }

 private:
  // An EXSPEC decoder and its drafter.
  struct Pool {
    ModelDrafter drafter;
    std::unique_ptr<Decoder> decoder;
    explicit Pool(const ServeEngineSettings& s)
        : drafter(*s.draft), decoder(make_decoder(DecoderKind::kExspec, *s.target, &drafter, s.decoder)) {}
  };

  ServeEngineSettings settings_;
  std::unique_ptr<Pool> pool_;  // while there is work
  std::deque<std::pair<int64_t, ServeRequest>> waiting_;  // for a free place of the window
  std::map<int64_t, Asked> scored_;  // admitted requests that asked for log-probabilities
};

}  // namespace

std::unique_ptr<ServeEngine> make_serve_engine(const ServeEngineSettings& settings) {
  if (settings.engine == Engine::kExspec) return std::make_unique<ExspecServeEngine>(settings);
  return std::make_unique<BatchServeEngine>(settings);
}

}  // namespace specgate::cli
