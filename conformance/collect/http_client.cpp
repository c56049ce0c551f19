#include "conformance/collect/http_client.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

std::optional<double> retry_after_of(const http::response<http::string_body>& response) {
  const auto field = response.find(http::field::retry_after);
  if (field == response.end()) return std::nullopt;
  const std::string_view value(field->value().data(), field->value().size());
  double seconds = 0.0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (error != std::errc{} || end != value.data() + value.size() || !std::isfinite(seconds) || seconds < 0.0)
    return std::nullopt;
  return seconds;
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

std::string endpoint_url(const Endpoint& endpoint) {
  return "http://" + endpoint.host + ":" + std::to_string(endpoint.port) + endpoint.prefix;
}

struct HttpClient::Connection {
  Endpoint endpoint;
  HttpLimits limits;
  const std::atomic<bool>* abandon;
  asio::io_context io;
  tcp::resolver resolver{io};
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  bool open = false;

  Connection(const Endpoint& e, const HttpLimits& l, const std::atomic<bool>* a) : endpoint(e), limits(l), abandon(a) {}

  // One request and its response, on this connection or a new one. The deadline starts again
  // for the new one when the kept-alive connection turns out closed.
  HttpResponse exchange(http::verb method, const std::string& path, const std::string& body,
                        const std::function<bool(std::string_view)>* on_body = nullptr) {
    http::request<http::string_body> request{method, endpoint.prefix + path, 11};
    request.set(http::field::host, endpoint.host);
    if (method == http::verb::post) request.set(http::field::content_type, "application/json");
    request.body() = body;
    request.keep_alive(true);
    request.prepare_payload();
    std::optional<http::response_parser<http::string_body>> parser;
    const auto fresh_parser = [&] {
      parser.emplace();
      parser->body_limit(static_cast<uint64_t>(limits.max_response_bytes));
    };
    fresh_parser();

    const bool reused = open;
    std::optional<beast::error_code> outcome;
    const auto finish = [&](beast::error_code error) { outcome = error; };
    // The header alone first: Beast 1.74 checks body_limit against Content-Length reliably only
    // when the header is read without the body. An interim reply (100 Continue, 103 Early Hints)
    // has no body and comes before the final one.
    bool interim = false;  // an interim reply came: the server has the request
    bool reader_stopped = false;
    // A streamed body, handed on and dropped as it comes.
    std::function<void()> read_streamed = [&] {
      http::async_read_some(stream, buffer, *parser, [&](beast::error_code read_error, size_t) {
        std::string& piece = parser->get().body();
        if (!piece.empty()) {
          reader_stopped = !(*on_body)(piece);
          piece.clear();
        }
        if (read_error || reader_stopped || parser->is_done()) return finish(read_error);
        read_streamed();
      });
    };
    std::function<void()> read_reply = [&] {
      http::async_read_header(stream, buffer, *parser, [&](beast::error_code header_error, size_t) {
        if (header_error) return finish(header_error);
        if (parser->get().result_int() / 100 == 1 && parser->get().result() != http::status::switching_protocols) {
          interim = true;
          fresh_parser();
          return read_reply();
        }
        if (on_body != nullptr && parser->get().result_int() / 100 == 2) return read_streamed();
        http::async_read(stream, buffer, *parser, [&](beast::error_code read_error, size_t) { finish(read_error); });
      });
    };
    const auto send = [&] {
      http::async_write(stream, request, [&](beast::error_code error, size_t) {
        if (error) return finish(error);
        read_reply();
      });
    };
    if (open) {
      send();
    } else {
      resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), [&](beast::error_code error, tcp::resolver::results_type found) {
        if (error) return finish(error);
        stream.async_connect(found, [&](beast::error_code connect_error, const tcp::endpoint&) {
          if (connect_error) return finish(connect_error);
          open = true;
          send();
        });
      });
    }

    // Polled rather than timed by the stream, so that one deadline covers the whole request and
    // an abandon is seen within a tenth of a second. Stopped by closing the socket, not by
    // cancelling its operations: a stream that never pauses completes each read before a cancel
    // reaches it, and the next read would start on an open socket.
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.timeout_seconds));
    std::string stopped;
    io.restart();
    while (!outcome) {
      io.run_for(std::chrono::milliseconds(100));
      if (outcome) continue;
      if (stopped.empty() && abandon != nullptr && abandon->load()) stopped = "abandoned: interrupted";
      if (stopped.empty() && Clock::now() >= deadline) {
        std::ostringstream seconds;
        seconds << limits.timeout_seconds;
        stopped = "no complete response within " + seconds.str() + " s (--timeout)";
      }
      if (stopped.empty()) continue;
      resolver.cancel();
      beast::error_code ignored;
      stream.socket().close(ignored);
    }

    HttpResponse response;
    if (reader_stopped) {
      close();
      response.status = static_cast<int>(parser->get().result_int());
      return response;
    }
    if (*outcome || !parser->is_done()) {
      const bool stale = reused && stopped.empty() && !interim && !parser->got_some();
      close();
      // A kept-alive connection that the server closed while idle fails before any reply.
      if (stale) return exchange(method, path, body, on_body);
      if (!stopped.empty()) {
        response.error = stopped;
      } else if (*outcome == http::error::body_limit) {
        response.error = "the response is larger than " + std::to_string(limits.max_response_bytes) + " bytes";
      } else {
        response.error = outcome->message();
      }
      return response;
    }
    http::response<http::string_body> message = parser->release();
    response.status = static_cast<int>(message.result_int());
    response.retry_after = retry_after_of(message);
    if (!message.keep_alive()) close();
    response.body = std::move(message.body());
    return response;
  }

  void close() {
    beast::error_code ignored;
    stream.socket().close(ignored);
    buffer.clear();
    open = false;
  }
};

HttpClient::HttpClient(const Endpoint& endpoint, const HttpLimits& limits, const std::atomic<bool>* abandon)
    : connection_(std::make_unique<Connection>(endpoint, limits, abandon)) {}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::post_json(const std::string& path, const std::string& body) {
  return connection_->exchange(http::verb::post, path, body);
}

HttpResponse HttpClient::post_stream(const std::string& path, const std::string& body,
                                     const std::function<bool(std::string_view)>& on_body) {
  return connection_->exchange(http::verb::post, path, body, &on_body);
}

HttpResponse HttpClient::get(const std::string& path) { return connection_->exchange(http::verb::get, path, ""); }

std::string quoted_body(const std::string& body) {
  constexpr size_t kQuotedBodyBytes = 200;
  std::string quoted = body.substr(0, kQuotedBodyBytes);
  std::replace(quoted.begin(), quoted.end(), '\n', ' ');
  return body.size() > kQuotedBodyBytes ? quoted + "..." : quoted;
}

}  // namespace specgate::cli
