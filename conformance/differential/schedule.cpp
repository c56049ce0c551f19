#include "conformance/differential/schedule.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace specgate::cli {

std::vector<Schedule> plan_schedules(const CrowdSettings& settings) {
  std::vector<Schedule> schedules{Schedule{.name = "alone"}};
  if (settings.stream) schedules.push_back({.name = "stream-alone", .streamed = true});
  std::mt19937_64 random(settings.seed);
  for (int64_t crowd = 1; crowd <= settings.crowds; ++crowd) {
    Schedule schedule{.name = "crowd-" + std::to_string(crowd), .in_flight = settings.max_in_flight, .shuffled = true,
                      .order_seed = random(), .stagger_seed = random(), .streamed = settings.stream};
    if (crowd == 2 || (settings.crowds == 1 && settings.fillers_asked)) schedule.fillers = settings.fillers;
    if (crowd == 3) schedule.stagger_seconds = settings.stagger_seconds;
    if (crowd > 3) {
      schedule.in_flight = std::uniform_int_distribution<int64_t>(std::min<int64_t>(2, settings.max_in_flight),
                                                                  settings.max_in_flight)(random);
      schedule.shuffled = random() % 2 == 0;
      if (random() % 2 == 0) schedule.fillers = settings.fillers;
      if (random() % 2 == 0) schedule.stagger_seconds = settings.stagger_seconds;
    }
    schedules.push_back(std::move(schedule));
  }
  return schedules;
}

std::vector<size_t> question_order(const Schedule& schedule, size_t count) {
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  if (!schedule.shuffled) return order;
  std::mt19937_64 random(schedule.order_seed);
  for (size_t i = count; i > 1; --i) std::swap(order[i - 1], order[random() % i]);  // Fisher-Yates, the same everywhere
  return order;
}

}  // namespace specgate::cli
