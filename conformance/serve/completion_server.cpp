#include "conformance/serve/completion_server.h"

#include <chrono>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

constexpr const char* kJson = "application/json";
constexpr time_t kConnectionSeconds = 60;

void send_error(httplib::Response& response, int status, const std::string& message) {
  response.status = status;
  if (status == 503) response.set_header("Retry-After", "1");
  response.set_content(error_response(status, message), kJson);
}

}  // namespace

void serve_completions(DecodeLoop& loop, const Tokenizer& tokenizer, const ServeLimits& limits, const ServerAddress& address,
                       int64_t threads, const std::atomic<bool>& stop, const std::function<void(int)>& on_listening) {
  httplib::Server server;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // Longer than httplib's 5 s defaults: a client's next request may come late while the
  // decoder keeps every core busy.
  server.set_keep_alive_timeout(kConnectionSeconds);
  server.set_read_timeout(kConnectionSeconds, 0);
  server.set_write_timeout(kConnectionSeconds, 0);
  std::atomic<int64_t> next_id{0};

  server.Post("/v1/completions", [&](const httplib::Request& http_request, httplib::Response& response) {
    ServeRequest request;
    try {
      request = parse_completion_request(http_request.body, tokenizer, limits);
    } catch (const RequestRefused& refused) {
      return send_error(response, refused.status(), refused.what());
    }
    std::optional<std::future<Generated>> future = loop.submit(request);
    if (!future) {
      return send_error(response, 503, loop.closing() ? "the server is shutting down" : "the request queue is full");
    }
    try {
      const Generated generated = future->get();
      response.set_content(completion_response(request, generated, tokenizer, limits.model, next_id++), kJson);
    } catch (const std::exception& e) {
      send_error(response, 500, std::string("decoding failed: ") + e.what());
    }
  });
  server.Get("/health", [&](const httplib::Request&, httplib::Response& response) {
    if (loop.closing()) return send_error(response, 503, "the server is shutting down");
    response.status = 200;
  });
  server.Get("/v1/models", [&](const httplib::Request&, httplib::Response& response) {
    const auto created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    const nlohmann::json card = {{"id", limits.model}, {"object", "model"}, {"created", created.count()},
                                 {"owned_by", "specgate"}, {"max_model_len", limits.context}};
    response.set_content(nlohmann::json{{"object", "list"}, {"data", {card}}}.dump(), kJson);
  });

  const int port = address.port == 0 ? server.bind_to_any_port(address.host) : server.bind_to_port(address.host, address.port)
                                                                                    ? address.port
                                                                                    : -1;
  if (port <= 0) throw InputError("--host/--port: cannot listen on " + address.host + ":" + std::to_string(address.port));
  std::thread listener([&server] { server.listen_after_bind(); });
  on_listening(port);
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  loop.close();
  loop.drain();
  server.stop();
  listener.join();
}

}  // namespace specgate::cli
