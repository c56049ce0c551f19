#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "conformance/serve/completion_request.h"
#include "conformance/serve/decode_loop.h"
#include "conformance/serve/http_framing.h"
#include "conformance/serve/serve_reporter.h"

namespace specgate::cli {

struct ServerAddress {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port
};

// Serves POST /v1/completions, POST /v1/chat/completions, GET /health, GET /v1/models and GET
// /metrics on `address` until `stop` turns true; then new requests get 503, those in flight
// finish and are answered, and it returns. A request whose client closes the connection before
// its answer is cancelled. `on_listening` gets the bound port. A request that fails is answered alone (400 for bad input,
// 500 with one line otherwise); the server serves on. Throws InputError when the address cannot
// be bound.
void serve_completions(DecodeLoop& loop, const ServeReporter& reporter, const Tokenizer& tokenizer, const ServeLimits& limits,
                       const ServerAddress& address, const ConnectionLimits& connections, const std::atomic<bool>& stop,
                       const std::function<void(int)>& on_listening);

}  // namespace specgate::cli
