#include "conformance/terminal/stop_signals.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace specgate::cli {
namespace {

std::atomic<bool> stop{false};
std::atomic<bool> abandon{false};
const char* notice_text = "";
struct sigaction previous_int {}, previous_term {};

extern "C" void on_stop_signal(int) {
  if (stop.exchange(true)) {
    abandon.store(true);
    return;
  }
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, notice_text, std::strlen(notice_text));
}

}  // namespace

StopSignals::StopSignals(const char* notice) {
  stop.store(false);
  abandon.store(false);
  notice_text = notice;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

const std::atomic<bool>& StopSignals::stop_requested() { return stop; }
const std::atomic<bool>& StopSignals::abandon_requested() { return abandon; }

}  // namespace specgate::cli
