#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace specgate::cli {

// A one-line progress bar on stderr, redrawn in place, when stderr is a terminal; silent
// otherwise, so logs and pipes stay clean. The line is cleared when the bar goes away.
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Marks `done` of the total as finished; `detail` says what is running now.
  void update(int64_t done, const std::string& detail = "");

 private:
  bool enabled_;
  std::string label_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specgate::cli
