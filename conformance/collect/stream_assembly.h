#pragma once

#include <cstdint>
#include <string_view>

#include "conformance/collect/dialect.h"

namespace specgate::cli {

// Puts a streamed answer together from its events' data, in the order they arrived, and holds
// the stream to what OpenAI's protocol promises: chunks of one choice (index 0), no text or
// tokens after the chunk that gave the finish reason, and data: [DONE] last (for a dialect whose
// streams end so; otherwise nothing after the finish reason's chunk).
class StreamAssembly {
 public:
  explicit StreamAssembly(const Dialect& dialect) : dialect_(dialect) {}

  // The next event's data, which arrived `seconds` after the request was sent. Throws
  // MalformedResponse naming the chunk, counted from 1.
  void add(std::string_view data, double seconds);
  // The whole answer, with its StreamRecord. Throws MalformedResponse when the stream ended
  // before data: [DONE] or without a finish reason.
  Completion finish();

 private:
  void take(const StreamChunk& chunk, double seconds);

  const Dialect& dialect_;
  Completion completion_;
  StreamRecord record_;
  int64_t chunks_ = 0;
  bool finished_ = false;  // a chunk gave the finish reason
  bool done_ = false;      // data: [DONE] came
};

}  // namespace specgate::cli
