#include "conformance/terminal/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace specgate::cli {
namespace {

constexpr int kBarWidth = 28;

}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total)
    : terminal_(isatty(STDERR_FILENO) == 1),
      label_(std::move(label)),
      total_(total),
      start_(std::chrono::steady_clock::now()) {
  update(0);
}

ProgressBar::~ProgressBar() {
  if (terminal_ && total_ > 0) std::fprintf(stderr, "\r\033[K");
}

void ProgressBar::update(int64_t done, const std::string& detail) {
  if (total_ <= 0) return;
  done = std::clamp<int64_t>(done, 0, total_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (!terminal_) {
    if (elapsed - logged_at_ < kLogSeconds) return;
    logged_at_ = elapsed;
    std::fprintf(stderr, "%s: %lld/%lld after %.0fs %s\n", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), elapsed, detail.c_str());
    std::fflush(stderr);
    return;
  }
  const int filled = static_cast<int>(kBarWidth * done / total_);
  std::fprintf(stderr, "\r\033[K%s [%s%s] %lld/%lld %.0fs %s", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(kBarWidth - filled, ' ').c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), elapsed, detail.c_str());
  std::fflush(stderr);
}

std::function<void(int64_t, int64_t)> progress_in(std::optional<ProgressBar>& bar, std::string label) {
  return [&bar, label = std::move(label)](int64_t done, int64_t total) {
    if (!bar) bar.emplace(label, total);
    bar->update(done);
  };
}

}  // namespace specgate::cli
