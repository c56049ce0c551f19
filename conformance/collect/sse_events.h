#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace specgate::cli {

// Splits a text/event-stream body, fed as it arrives in pieces of any size, into its events'
// data as the HTML standard's event-stream parsing gives it: lines end in CRLF, LF or CR; a
// blank line ends an event; an event's `data:` lines (one space after the colon dropped) are
// joined by LF; comments (`:`) and the other fields (event, id, retry) are skipped, and so is an
// event without data. Bytes of an event not yet ended stay pending.
class SseEvents {
 public:
  // The data of each event that `bytes` completes, in order.
  std::vector<std::string> feed(std::string_view bytes);
  // Whether an event was begun and not ended: a stream that stops here was cut.
  bool pending() const { return !line_.empty() || has_data_; }

 private:
  void end_line(std::vector<std::string>& events);

  std::string line_;  // the line being read
  std::string data_;  // the event's data so far
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte was CR: an LF next ends no second line
};

}  // namespace specgate::cli
