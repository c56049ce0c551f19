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

// What connections may take of the server; serve's flags set each.
struct ConnectionLimits {
  int64_t max_connections = 512;          // open at once; one more is answered 503 and closed
  int64_t max_body_bytes = 8 << 20;       // a larger request body is answered 413
  int64_t max_header_bytes = 16 << 10;    // larger request headers are answered 431
  double request_timeout_seconds = 30.0;  // to receive one whole request, or to wait idle for the next
  int64_t backlog = 1024;                 // connections the kernel queues before they are accepted
  int64_t io_threads = 2;                 // read, parse and write; decoding has a thread of its own
};

// Serves POST /v1/completions, POST /v1/chat/completions, GET /health and GET /v1/models on `address` until `stop` turns
// true; then new requests get 503, those in flight finish and are answered, and it returns.
// `on_listening` gets the bound port. A request that fails is answered alone (400 for bad input,
// 500 with one line otherwise); the server serves on. Throws InputError when the address cannot
// be bound.
void serve_completions(DecodeLoop& loop, const Tokenizer& tokenizer, const ServeLimits& limits, const ServerAddress& address,
                       const ConnectionLimits& connections, const std::atomic<bool>& stop,
                       const std::function<void(int)>& on_listening);

}  // namespace specgate::cli
