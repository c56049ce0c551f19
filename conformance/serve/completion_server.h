#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "conformance/serve/completion_request.h"
#include "conformance/serve/decode_loop.h"

namespace specgate::cli {

struct ServerAddress {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port
};

// Serves POST /v1/completions, GET /health and GET /v1/models on `address` with `threads`
// connection threads, until `stop` turns true; then new requests get 503, those in flight
// finish, and it returns. `on_listening` gets the bound port. Throws InputError when the
// address cannot be bound.
void serve_completions(DecodeLoop& loop, const Tokenizer& tokenizer, const ServeLimits& limits, const ServerAddress& address,
                       int64_t threads, const std::atomic<bool>& stop, const std::function<void(int)>& on_listening);

}  // namespace specgate::cli
