#pragma once

#include <chrono>
#include <thread>

#include <httplib.h>

#include "conformance/collect/http_client.h"

namespace specgate::cli {

// An httplib server on a free port of 127.0.0.1, for tests: routes go on routes(), then start()
// listens on a thread of its own until the object is destroyed. Declared after what its routes
// use, it stops before that goes.
class LocalHttpServer {
 public:
  httplib::Server& routes() { return server_; }
  void start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalHttpServer() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

  Endpoint endpoint() const { return {.host = "127.0.0.1", .port = port_}; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace specgate::cli
