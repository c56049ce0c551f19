#include "conformance/terminal/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace specgate::cli {
namespace {

constexpr int kBarWidth = 28;

}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total)
    : enabled_(isatty(STDERR_FILENO) == 1 && total > 0),
      label_(std::move(label)),
      total_(total),
      start_(std::chrono::steady_clock::now()) {
  update(0);
}

ProgressBar::~ProgressBar() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void ProgressBar::update(int64_t done, const std::string& detail) {
  if (!enabled_) return;
  done = std::clamp<int64_t>(done, 0, total_);
  const int filled = static_cast<int>(kBarWidth * done / total_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r\033[K%s [%s%s] %lld/%lld %.0fs %s", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(kBarWidth - filled, ' ').c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), elapsed, detail.c_str());
  std::fflush(stderr);
}

}  // namespace specgate::cli
