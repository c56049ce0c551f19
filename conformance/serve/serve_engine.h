#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "conformance/engines/engine_run.h"
#include "conformance/serve/completion_request.h"
#include "conformance/serve/response_faults.h"
#include "impl/decoding/decoders.h"
#include "impl/model/transformer.h"

namespace specgate::cli {

// One of our decoders behind the server: requests are admitted as they come, and each step
// decodes for a while and hands back those that finished.
class ServeEngine {
 public:
  virtual ~ServeEngine() = default;
  virtual void admit(int64_t id, ServeRequest request) = 0;
  virtual bool has_work() const = 0;
  virtual std::vector<std::pair<int64_t, Generated>> step() = 0;
};

struct ServeEngineSettings {
  Engine engine = Engine::kExspec;
  const Transformer* target = nullptr;
  const Transformer* draft = nullptr;  // eqspec and exspec
  // Each request brings its own sampling and length: decode holds K, the EOS ids and the seeded
  // faults (a sampling fault acts on sampled requests only). exspec: the window, and pool slots
  // of sequence_capacity slots, which every request the server admits fits.
  DecoderSettings decoder;
  ResponseFaults response_faults;  // seeded faults of what eqspec and exspec report besides tokens
};

// Log-probabilities, when a request asks, are the oracle's: recorded as it decodes, or from one
// pass of the target over prompt and tokens after eqspec, nonspec-batch or exspec decoded them.
// exspec: continuous admission, each step one speculative round (requests join the window at
// the next step). oracle: one request per step. nonspec-batch and eqspec: each step takes the
// oldest requests, up to batch_size, and decodes them to the end. Requests of any sampling
// settings and lengths share a batch, each decoded as it asked.
std::unique_ptr<ServeEngine> make_serve_engine(const ServeEngineSettings& settings);

}  // namespace specgate::cli
