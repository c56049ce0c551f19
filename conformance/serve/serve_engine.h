#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "conformance/engines/engine_run.h"
#include "conformance/serve/completion_request.h"
#include "impl/common/sequence_result.h"
#include "impl/decoding/decoders.h"
#include "impl/decoding/tree_drafter.h"
#include "impl/model/transformer.h"

namespace specgate::cli {

// One of our decoders behind the server: requests are admitted as they come, each step decodes
// for a while and hands back those that finished (each result's sequence_index is its request's
// id), what the others generated so far can be read between steps, and a request whose client
// has gone is cancelled.
class ServeEngine {
 public:
  virtual ~ServeEngine() = default;
  // `group`: the id the choices of one client request share (its first choice's).
  virtual void admit(int64_t id, int64_t group, ServeRequest request) = 0;
  virtual bool has_work() const = 0;
  virtual std::vector<SequenceResult> step() = 0;
  // Drops request `id` before the next step, waiting or decoding; no step returns it.
  virtual void cancel(int64_t id) = 0;
  // Each request being decoded, by id, with the tokens it generated so far.
  virtual void visit_live(const Decoder::LiveVisitor& visit) const = 0;
};

struct ServeEngineSettings {
  Engine engine = Engine::kExspec;
  const Transformer* target = nullptr;
  Drafting drafting;                   // eqspec and exspec
  const Transformer* draft = nullptr;  // eqspec and exspec drafting with a model
  // Each request brings its own sampling and length: decode holds K, the EOS ids and the seeded
  // faults (a sampling fault acts on sampled requests only). eqspec and nonspec-batch: the batch
  // size. exspec: the window, and pool slots of sequence_capacity slots, which every request the
  // server admits fits.
  DecoderSettings decoder;
  const TreePolicy* tree = nullptr;    // eqspec with a draft model: verify token trees drafted so
};

// exspec: continuous admission, each step one speculative round (requests join the window at
// the next step); the choices of one client request hold at most every place of the window but
// one, and no sequence sits out of the batches more than ceil(W / B) - 1 steps in a row, so that
// another client's request is decoded at once. nonspec-batch and eqspec: the oldest requests, up
// to batch_size, decoded as one batch, a round a step, the next batch once the last of them
// finished. oracle: one request per step, whole (none is live between steps). Requests of any
// sampling settings and lengths share a batch, each decoded as it asked.
std::unique_ptr<ServeEngine> make_serve_engine(const ServeEngineSettings& settings);

}  // namespace specgate::cli
