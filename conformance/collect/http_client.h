#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace specgate::cli {

// Where a server listens: http://HOST[:PORT][/PREFIX]; the prefix goes before every path.
struct Endpoint {
  std::string host;
  int port = 80;
  std::string prefix;
};

// Throws InputError naming --endpoint for anything but an http URL.
Endpoint parse_endpoint(const std::string& url);
// http://HOST:PORT/PREFIX
std::string endpoint_url(const Endpoint& endpoint);

struct HttpResponse {
  int status = 0;             // 0 when no response came
  std::string body;
  std::string error;          // why no response came; empty otherwise
  std::optional<double> retry_after;  // seconds, from a Retry-After header
};

struct HttpLimits {
  double timeout_seconds = 600.0;                  // per request: connecting, sending and the whole response
  int64_t max_response_bytes = int64_t{256} << 20;  // a longer response body fails the request
};

// The start of a response body on one line, as an error message quotes it.
std::string quoted_body(const std::string& body);

// One keep-alive connection to a server; not to be shared between threads.
class HttpClient {
 public:
  // A request in flight is abandoned as soon as `abandon` (when given) turns true.
  HttpClient(const Endpoint& endpoint, const HttpLimits& limits, const std::atomic<bool>* abandon = nullptr);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResponse post_json(const std::string& path, const std::string& body);
  // As post_json, but the body of a 2xx response goes to `on_body` piece by piece as it arrives
  // (the response's body stays empty); on_body returning false ends the request and closes the
  // connection. The limits cover the whole stream.
  HttpResponse post_stream(const std::string& path, const std::string& body,
                           const std::function<bool(std::string_view)>& on_body);
  HttpResponse get(const std::string& path);

 private:
  struct Connection;
  std::unique_ptr<Connection> connection_;
};

}  // namespace specgate::cli
