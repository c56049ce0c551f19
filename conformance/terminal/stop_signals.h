#pragma once

#include <atomic>

namespace specgate::cli {

// SIGINT and SIGTERM while it lives: the first asks the command to stop (start nothing new and
// keep what has finished) and prints `notice` on stderr; the next asks it to abandon what is in
// flight. One at a time.
class StopSignals {
 public:
  explicit StopSignals(const char* notice);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  static const std::atomic<bool>& stop_requested();
  static const std::atomic<bool>& abandon_requested();
};

}  // namespace specgate::cli
