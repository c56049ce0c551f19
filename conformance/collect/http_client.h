#pragma once

#include <memory>
#include <optional>
#include <string>

namespace specgate::cli {

// Where a server listens: http://HOST[:PORT][/PREFIX]; the prefix goes before every path.
struct Endpoint {
  std::string host;
  int port = 80;
  std::string prefix;
};

// Throws InputError naming --endpoint for anything but an http URL.
Endpoint parse_endpoint(const std::string& url);

struct HttpResponse {
  int status = 0;             // 0 when no response came
  std::string body;
  std::string error;          // why no response came; empty otherwise
  std::optional<double> retry_after;  // seconds, from a Retry-After header
};

// One keep-alive connection to a server; not to be shared between threads.
class HttpClient {
 public:
  HttpClient(const Endpoint& endpoint, double timeout_seconds);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResponse post_json(const std::string& path, const std::string& body);
  HttpResponse get(const std::string& path);

 private:
  struct Connection;
  std::unique_ptr<Connection> connection_;
  std::string prefix_;
};

}  // namespace specgate::cli
