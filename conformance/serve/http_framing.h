#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

namespace specgate::cli {

// What connections may take of the server; serve's flags set each.
struct ConnectionLimits {
  int64_t max_connections = 512;          // open at once; one more is answered 503 and closed
  int64_t max_body_bytes = 8 << 20;       // a larger request body is answered 413
  int64_t max_header_bytes = 16 << 10;    // larger request headers are answered 431
  double request_timeout_seconds = 30.0;  // to receive one whole request, or to wait idle for the next
  int64_t backlog = 1024;                 // connections the kernel queues before they are accepted
  int64_t io_threads = 2;                 // read, parse and write; decoding has a thread of its own
  int64_t report_threads = 2;             // log-probabilities asked of finished sequences: a target pass each
};

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// What serve answers, and then closes the connection, instead of reading a request on.
struct Refusal {
  boost::beast::http::status status;
  std::string message;
};

// Bounds `parser`'s header and body by `limits`.
void bound(RequestParser& parser, const ConnectionLimits& limits);

// Once the header is read: 411 for a body sent with Transfer-Encoding, before a byte of it is
// read (no limit the parser keeps bounds a chunked body's extensions and trailers, and a trailer
// field past 65,533 bytes throws out of it).
std::optional<Refusal> refusal_after_header(const RequestParser& parser);

// Whether the client waits for "100 Continue" before it sends the body (curl does for bodies
// over 1 KiB).
bool expects_continue(const RequestParser& parser);

// After a read that failed: 413 or 431 naming the flag whose limit the request passed, 400 for a
// malformed request; nullopt when the connection just ended (closed, timed out, cut short).
std::optional<Refusal> refusal_after_error(boost::beast::error_code error, const ConnectionLimits& limits);

}  // namespace specgate::cli
