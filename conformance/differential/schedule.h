#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace specgate::cli {

// How one pass over the questions is sent to the server. `alone` sends one request at a time in
// the bench's order; each crowd changes what else the server is serving while it answers.
struct Schedule {
  std::string name;            // alone, crowd-1, crowd-2...
  int64_t in_flight = 1;       // requests sent at once
  bool shuffled = false;       // questions in an order drawn from order_seed, not the bench's
  uint64_t order_seed = 0;
  int64_t fillers = 0;         // long-prompt requests sent among the questions, not compared
  double stagger_seconds = 0;  // each request waits up to this long before it is sent
  uint64_t stagger_seed = 0;
  bool streamed = false;       // answers read from streams
};

struct CrowdSettings {
  int64_t crowds = 3;
  int64_t max_in_flight = 8;
  int64_t fillers = 4;
  bool fillers_asked = false;  // --fillers given: a single crowd sends them too
  double stagger_seconds = 0.05;
  uint64_t seed = 0;
  bool stream = false;  // every schedule after alone streamed, stream-alone first
};

// `alone`, then with settings.stream `stream-alone` (alone, streamed), then settings.crowds
// crowds drawn from settings.seed, streamed with settings.stream. The first three cover one
// feature each at max_in_flight: a shuffled crowd; the same with fillers (long prompts, for
// chunked prefill), which a single crowd sends instead where fillers_asked; the same with
// staggered arrivals. Later crowds draw every feature, in
// flight from [2, max_in_flight].
std::vector<Schedule> plan_schedules(const CrowdSettings& settings);

// The order in which `schedule` sends `count` questions: their places in the bench.
std::vector<size_t> question_order(const Schedule& schedule, size_t count);

}  // namespace specgate::cli
