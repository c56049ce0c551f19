#include "conformance/collect/http_client.h"

#include <charconv>
#include <cmath>
#include <regex>

#include <httplib.h>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

HttpResponse response_of(const httplib::Result& result) {
  HttpResponse response;
  if (!result) {
    response.error = httplib::to_string(result.error());
    return response;
  }
  response.status = result->status;
  response.body = result->body;
  if (result->has_header("Retry-After")) {
    const std::string value = result->get_header_value("Retry-After");
    double seconds = 0.0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error == std::errc{} && end == value.data() + value.size() && std::isfinite(seconds) && seconds >= 0.0)
      response.retry_after = seconds;
  }
  return response;
}

}  // namespace

Endpoint parse_endpoint(const std::string& url) {
  static const std::regex pattern(R"(^http://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:([0-9]{1,5}))?(/.*)?$)");
  std::smatch match;
  if (!std::regex_match(url, match, pattern))
    throw InputError("--endpoint: expected http://HOST[:PORT][/PREFIX], got '" + url + "'");
  Endpoint endpoint;
  endpoint.host = match[1].str();
  if (endpoint.host.front() == '[') endpoint.host = endpoint.host.substr(1, endpoint.host.size() - 2);
  if (match[3].matched) endpoint.port = std::stoi(match[3].str());
  if (endpoint.port < 1 || endpoint.port > 65535) throw InputError("--endpoint: port " + match[3].str() + " is out of range");
  endpoint.prefix = match[4].str();
  while (!endpoint.prefix.empty() && endpoint.prefix.back() == '/') endpoint.prefix.pop_back();
  return endpoint;
}

struct HttpClient::Connection {
  httplib::Client client;
  Connection(const Endpoint& endpoint) : client(endpoint.host, endpoint.port) {}
};

HttpClient::HttpClient(const Endpoint& endpoint, double timeout_seconds)
    : connection_(std::make_unique<Connection>(endpoint)), prefix_(endpoint.prefix) {
  const auto seconds = static_cast<time_t>(timeout_seconds);
  const auto microseconds = static_cast<time_t>((timeout_seconds - static_cast<double>(seconds)) * 1e6);
  httplib::Client& client = connection_->client;
  client.set_connection_timeout(seconds, microseconds);
  client.set_read_timeout(seconds, microseconds);
  client.set_write_timeout(seconds, microseconds);
  client.set_keep_alive(true);
}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::post_json(const std::string& path, const std::string& body) {
  return response_of(connection_->client.Post((prefix_ + path).c_str(), body, "application/json"));
}

HttpResponse HttpClient::get(const std::string& path) { return response_of(connection_->client.Get((prefix_ + path).c_str())); }

}  // namespace specgate::cli
