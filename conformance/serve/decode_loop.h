#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <variant>
#include <vector>

#include "conformance/serve/serve_engine.h"

namespace specgate::cli {

// What became of a request: its decoded sequence, or why decoding it failed.
using Outcome = std::variant<SequenceResult, std::exception_ptr>;

// Feeds requests to a ServeEngine, made and stepped on a thread of its own (the only thread that
// should run libtorch's parallel work while the loop runs: libgomp keeps a pool of threads for
// every thread that does, and once they outnumber the cores it puts them to sleep between
// operators, which costs a decode step several milliseconds). Requests that arrive while it
// decodes are admitted before its next step, and those cancelled meanwhile leave then. At most
// `capacity` requests are admitted and unfinished at once. When a step throws, or returns a
// request twice or one it was never given, the requests admitted to the engine get that error
// and a fresh engine from `make_engine` takes the next ones.
class DecodeLoop {
 public:
  // Called once per request, on the loop's thread, when it finished or failed; never for a
  // request cancelled first.
  using OnFinished = std::function<void(Outcome)>;
  // Called on the loop's thread after each step that leaves a request unfinished, with the
  // tokens it generated so far.
  using OnTokens = std::function<void(std::span<const int64_t> generated)>;

  DecodeLoop(std::function<std::unique_ptr<ServeEngine>()> make_engine, int64_t capacity);
  ~DecodeLoop();
  DecodeLoop(const DecodeLoop&) = delete;
  DecodeLoop& operator=(const DecodeLoop&) = delete;

  struct Submission {
    ServeRequest request;
    OnFinished on_finished;
    OnTokens on_tokens;  // may be empty
  };
  // Each request's id, all admitted at once; nullopt, and no callback ever called, when the loop
  // lacks room for them all or is closing.
  std::optional<std::vector<int64_t>> submit(std::vector<Submission> group);
  std::optional<int64_t> submit(ServeRequest request, OnFinished on_finished);
  // Drops request `id`, whose answer nobody will read: its callbacks are not called from now
  // on, and it leaves the engine before the next step.
  void cancel(int64_t id);
  // The most requests admitted and unfinished at once.
  int64_t capacity() const { return capacity_; }
  // Refuses new requests from now on; those admitted still finish.
  void close();
  bool closing() const;
  // Returns once close() was called and every admitted request has finished or was cancelled.
  void drain();

 private:
  void run();

  std::function<std::unique_ptr<ServeEngine>()> make_engine_;
  std::unique_ptr<ServeEngine> engine_;
  const int64_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  struct Arrival {
    int64_t id;
    int64_t group;  // the first id of its submission
    ServeRequest request;
  };
  std::deque<Arrival> arrived_;
  std::vector<int64_t> cancelled_;  // admitted to the engine, to leave it before the next step
  struct Callbacks {
    OnFinished on_finished;
    OnTokens on_tokens;
  };
  std::map<int64_t, Callbacks> unfinished_;
  int64_t next_id_ = 0;
  bool closing_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace specgate::cli
