#include "conformance/serve/serve_engine.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include "conformance/engines/drafting.h"
#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/decoders.h"
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

struct Admitted {
  int64_t id;
  int64_t group;
  ServeRequest request;
};
using Waiting = std::deque<Admitted>;

void erase_waiting(Waiting& waiting, int64_t id) {
  std::erase_if(waiting, [id](const Admitted& request) { return request.id == id; });
}

// exspec behind a server leaves no sequence out of its batches more than ceil(W / B) - 1 steps in
// a row, so that a request given a place in the window is decoded whatever shares it.
ServeEngineSettings with_bounded_wait(ServeEngineSettings settings) {
  if (settings.engine == Engine::kExspec)
    settings.decoder.exspec.max_wait_steps =
        smallest_feasible_wait(settings.decoder.exspec.window, settings.decoder.batch_size);
  return settings;
}

// One of the batch decoders fed as requests come: each is admitted when the decoder has a
// place, and leaves when it finishes or is cancelled. The decoder lives while there is work;
// the next request after a pause gets a fresh one. Rollback decodes greedy and sampled requests
// in batches of their own: an empty decoder takes the waiting requests of the first one's kind,
// and more of them as places free until a request of the other kind waits. exspec's
// window, which admits as places free, keeps a place that the choices of one client request
// cannot take: a long request of many choices (a stream nobody reads, until its timeout) would
// otherwise hold every place for as long as it decodes.
class DecoderServeEngine : public ServeEngine {
 public:
  explicit DecoderServeEngine(const ServeEngineSettings& settings) : settings_(with_bounded_wait(settings)) {}

  void admit(int64_t id, int64_t group, ServeRequest request) override {
    waiting_.push_back({id, group, std::move(request)});
  }

  bool has_work() const override { return !waiting_.empty() || (pool_ && pool_->decoder->has_work()); }

  std::vector<SequenceResult> step() override {
    if (!has_work()) return {};
    if (!pool_) pool_ = std::make_unique<Pool>(settings_);
    Decoder& decoder = *pool_->decoder;
    const bool one_kind = settings_.engine == Engine::kRollback;
    if (one_kind && !decoder.has_work() && !waiting_.empty()) greedy_ = waiting_.front().request.sampling.greedy();
    const bool draining = one_kind && decoder.has_work() && std::ranges::any_of(waiting_, [&](const auto& waiting) {
      return waiting.request.sampling.greedy() != greedy_;
    });
    for (auto next = waiting_.begin(); next != waiting_.end() && decoder.free_places() > 0 && !draining;) {
      if ((one_kind && next->request.sampling.greedy() != greedy_) || holds_its_share(next->group)) {
        ++next;
        continue;
      }
      decoder.admit(sequence(next->id, next->request));
      group_of_.emplace(next->id, next->group);
      next = waiting_.erase(next);
    }
    std::vector<SequenceResult> finished = decoder.step();
    for (const SequenceResult& result : finished) group_of_.erase(result.sequence_index);
    if (!decoder.has_work()) pool_.reset();
    return finished;
  }

  void cancel(int64_t id) override {
    erase_waiting(waiting_, id);
    if (!pool_) return;
    pool_->decoder->cancel(id);
    group_of_.erase(id);
    if (!pool_->decoder->has_work()) pool_.reset();
  }

  void visit_live(const Decoder::LiveVisitor& visit) const override {
    if (pool_) pool_->decoder->visit_live(visit);
  }

 private:
  // A decoder and its drafter.
  struct Pool {
    std::unique_ptr<Drafter> drafter;
    std::unique_ptr<TreeDrafter> tree_drafter;
    std::unique_ptr<Decoder> decoder;
    explicit Pool(const ServeEngineSettings& s) : drafter(make_drafter(s.engine, s.drafting, s.draft)) {
      if (s.tree != nullptr) {
        tree_drafter = make_model_tree_drafter(*s.draft, *s.tree);
        decoder = make_tree_decoder(decoder_kind(s.engine), *s.target, *tree_drafter, s.decoder);
      } else {
        decoder = make_decoder(decoder_kind(s.engine), *s.target, drafter.get(), s.decoder);
      }
    }
  };

  bool holds_its_share(int64_t group) const {
    if (settings_.engine != Engine::kExspec) return false;
    const auto held = std::ranges::count_if(group_of_, [group](const auto& entry) { return entry.second == group; });
    return held >= std::max<int64_t>(1, settings_.decoder.exspec.window - 1);
  }

  ServeEngineSettings settings_;
  std::unique_ptr<Pool> pool_;  // while there is work
  Waiting waiting_;             // for a place in the decoder
  std::map<int64_t, int64_t> group_of_;  // in the decoder, by id
  bool greedy_ = true;                   // rollback: the kind of request its rows are
};

class OracleServeEngine : public ServeEngine {
 public:
  explicit OracleServeEngine(const ServeEngineSettings& settings) : settings_(settings) {}

  void admit(int64_t id, int64_t group, ServeRequest request) override {
    waiting_.push_back({id, group, std::move(request)});
  }
  bool has_work() const override { return !waiting_.empty(); }
  void cancel(int64_t id) override { erase_waiting(waiting_, id); }
  void visit_live(const Decoder::LiveVisitor&) const override {}

  std::vector<SequenceResult> step() override {
    if (waiting_.empty()) return {};
    const Admitted next = std::move(waiting_.front());
    waiting_.pop_front();
    const OracleOptions options{.max_new_tokens = next.request.max_new_tokens, .sampling = next.request.sampling,
                                .eos_ids = settings_.decoder.decode.eos_ids, .top_logprobs = 0};
    SequenceResult result = oracle_generate(*settings_.target, next.request.prompt, options, random_stream(next.request));
    result.sequence_index = next.id;
    return {std::move(result)};
  }

 private:
  ServeEngineSettings settings_;
  Waiting waiting_;
};

}  // namespace

std::unique_ptr<ServeEngine> make_serve_engine(const ServeEngineSettings& settings) {
  if (settings.engine == Engine::kOracle) return std::make_unique<OracleServeEngine>(settings);
  return std::make_unique<DecoderServeEngine>(settings);
}

}  // namespace specgate::cli
