#include "conformance/collect/sse_events.h"

namespace specgate::cli {

std::vector<std::string> SseEvents::feed(std::string_view bytes) {
  std::vector<std::string> events;
  for (const char byte : bytes) {
    const bool lf_after_cr = after_cr_ && byte == '\n';
    after_cr_ = byte == '\r';
    if (lf_after_cr) continue;
    if (byte == '\r' || byte == '\n') {
      end_line(events);
    } else {
      line_ += byte;
    }
  }
  return events;
}

void SseEvents::end_line(std::vector<std::string>& events) {
  if (line_.empty()) {
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  const size_t colon = line_.find(':');
  if (line_.compare(0, colon, "data") == 0) {
    std::string_view value = colon == std::string::npos ? std::string_view() : std::string_view(line_).substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (has_data_) data_ += '\n';
    data_ += value;
    has_data_ = true;
  }
  line_.clear();
}

}  // namespace specgate::cli
