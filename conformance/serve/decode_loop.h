#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "conformance/serve/serve_engine.h"

namespace specgate::cli {

// Feeds requests to a ServeEngine on a thread of its own. Requests that arrive while it
// decodes are admitted before its next step. At most `capacity` requests are admitted and
// unfinished at once.
class DecodeLoop {
 public:
  DecodeLoop(std::unique_ptr<ServeEngine> engine, int64_t capacity);
  ~DecodeLoop();
  DecodeLoop(const DecodeLoop&) = delete;
  DecodeLoop& operator=(const DecodeLoop&) = delete;

  // The request's future generation, or nullopt when the loop is full or closing.
  std::optional<std::future<Generated>> submit(ServeRequest request);
  // Refuses new requests from now on; those admitted still finish.
  void close();
  bool closing() const;
  // Returns once close() was called and every admitted request has finished.
  void drain();

 private:
  void run();

  std::unique_ptr<ServeEngine> engine_;
  const int64_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<int64_t, ServeRequest>> arrived_;
  std::map<int64_t, std::promise<Generated>> unfinished_;
  int64_t next_id_ = 0;
  bool closing_ = false;
  bool stopping_ = false;
  bool failed_ = false;  // the engine threw: every request is refused from then on
  std::thread thread_;
};

}  // namespace specgate::cli
