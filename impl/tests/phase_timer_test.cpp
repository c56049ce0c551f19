// PhaseTimer charges each phase's time to its own counter and nothing to the others.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "impl/decoding/phase_timer.h"

namespace specgate {
namespace {

TEST(PhaseTimer, EachPhaseIsChargedToItsCounterFromTheLastBoundary) {
  EXPECT_FALSE(PhaseTimer::waits_for(c10::Device(c10::kCPU)));
  EXPECT_TRUE(PhaseTimer::waits_for(c10::Device(c10::kCUDA, 0)));
  const auto start = std::chrono::steady_clock::now();
  PhaseTimer timer(c10::Device(c10::kCPU), /*synchronise=*/true);  // the CPU is never waited for
  double first = 0.0, second = 0.0;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timer.charge(first);
  EXPECT_GE(first, 0.020);
  EXPECT_EQ(second, 0.0);
  const double after_first = first;
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  timer.charge(second);
  EXPECT_EQ(first, after_first) << "a phase is charged to its own counter only";
  EXPECT_GE(second, 0.010);
  timer.charge(first);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(first + second, elapsed) << "consecutive phases never overlap";
}

}  // namespace
}  // namespace specgate
