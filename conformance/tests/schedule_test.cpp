// How differential runs crowd a server: the schedules drawn from a seed, the order of the
// questions, the filler prompts.
#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "conformance/differential/differential.h"
#include "conformance/differential/schedule.h"

namespace specgate::cli {
namespace {

TEST(Schedules, AloneFirstThenOneFeaturePerCrowdThenDrawnOnes) {
  const std::vector<Schedule> schedules =
      plan_schedules({.crowds = 8, .max_in_flight = 6, .fillers = 3, .stagger_seconds = 0.2, .seed = 7});
  ASSERT_EQ(schedules.size(), 9u);
  EXPECT_EQ(schedules[0].name, "alone");
  EXPECT_EQ(schedules[0].in_flight, 1);
  EXPECT_FALSE(schedules[0].shuffled);
  EXPECT_EQ(schedules[0].fillers, 0);
  EXPECT_EQ(schedules[0].stagger_seconds, 0.0);
  for (int crowd = 1; crowd <= 3; ++crowd) {
    const Schedule& s = schedules[crowd];
    EXPECT_EQ(s.name, "crowd-" + std::to_string(crowd));
    EXPECT_EQ(s.in_flight, 6);
    EXPECT_TRUE(s.shuffled);
    EXPECT_EQ(s.fillers, crowd == 2 ? 3 : 0);
    EXPECT_EQ(s.stagger_seconds, crowd == 3 ? 0.2 : 0.0);
  }
  for (size_t crowd = 4; crowd < schedules.size(); ++crowd) {
    EXPECT_GE(schedules[crowd].in_flight, 2);
    EXPECT_LE(schedules[crowd].in_flight, 6);
    EXPECT_TRUE(schedules[crowd].fillers == 0 || schedules[crowd].fillers == 3);
  }
  const std::vector<Schedule> again =
      plan_schedules({.crowds = 8, .max_in_flight = 6, .fillers = 3, .stagger_seconds = 0.2, .seed = 7});
  const std::vector<Schedule> other =
      plan_schedules({.crowds = 8, .max_in_flight = 6, .fillers = 3, .stagger_seconds = 0.2, .seed = 8});
  for (size_t i = 1; i < schedules.size(); ++i) {
    EXPECT_EQ(again[i].order_seed, schedules[i].order_seed);
    EXPECT_EQ(again[i].in_flight, schedules[i].in_flight);
    EXPECT_NE(other[i].order_seed, schedules[i].order_seed);
  }
}

TEST(Schedules, ASingleCrowdSendsTheFillersAskedFor) {
  EXPECT_EQ(plan_schedules({.crowds = 1, .fillers = 3, .fillers_asked = true})[1].fillers, 3);
  EXPECT_EQ(plan_schedules({.crowds = 1, .fillers = 3})[1].fillers, 0) << "by default crowd 2 sends them";
  const std::vector<Schedule> two = plan_schedules({.crowds = 2, .fillers = 3, .fillers_asked = true});
  EXPECT_EQ(two[1].fillers, 0);
  EXPECT_EQ(two[2].fillers, 3);
}

TEST(Schedules, AShuffledOrderIsAPermutationFixedByItsSeed) {
  const Schedule bench_order{.name = "alone"};
  std::vector<size_t> identity(20);
  std::iota(identity.begin(), identity.end(), size_t{0});
  EXPECT_EQ(question_order(bench_order, 20), identity);
  const Schedule shuffled{.name = "crowd-1", .shuffled = true, .order_seed = 11};
  std::vector<size_t> order = question_order(shuffled, 20);
  EXPECT_NE(order, identity);
  EXPECT_EQ(order, question_order(shuffled, 20));
  EXPECT_NE(order, question_order(Schedule{.shuffled = true, .order_seed = 12}, 20));
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, identity);
}

TEST(Schedules, FillersCycleTheQuestionsFromADifferentOneEachUntilLongEnough) {
  const std::vector<Question> questions = {{1, "qa", {"alpha"}, {}}, {2, "qa", {"beta", "later"}, {}}, {3, "qa", {"gamma"}, {}}};
  const std::vector<Question> fillers = filler_questions(questions, 2, 14);
  ASSERT_EQ(fillers.size(), 2u);
  EXPECT_EQ(fillers[0].question_id, -1);
  EXPECT_EQ(fillers[0].turns, std::vector<std::string>{"alpha\n\nbeta\n\ngamma"});
  EXPECT_EQ(fillers[1].question_id, -2);
  EXPECT_EQ(fillers[1].turns, std::vector<std::string>{"beta\n\ngamma\n\nalpha"});
  EXPECT_TRUE(filler_questions({}, 3, 10).empty());
}

}  // namespace
}  // namespace specgate::cli
