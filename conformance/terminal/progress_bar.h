#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace specgate::cli {

// A one-line progress bar on stderr, redrawn in place, when stderr is a terminal; the line is
// cleared when the bar goes away. Off a terminal (a CI log, a pipe), a plain line of the same
// figures every kLogSeconds instead, so that a long run still says it is alive.
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Marks `done` of the total as finished; `detail` says what is running now.
  void update(int64_t done, const std::string& detail = "");

 private:
  static constexpr double kLogSeconds = 30.0;

  bool terminal_;
  std::string label_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_;
  double logged_at_ = 0.0;  // seconds after start_ of the last plain line
};

// A callback of a check's progress (done, total) that draws a bar labelled `label` in `bar` from
// its first call on; reset `bar` to clear the line before printing the verdict.
std::function<void(int64_t, int64_t)> progress_in(std::optional<ProgressBar>& bar, std::string label);

}  // namespace specgate::cli
