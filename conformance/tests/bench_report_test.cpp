// The bench chart's axis ticks, and its points, hover texts and whiskers on measurements made
// up for the test.
#include <cmath>

#include <gtest/gtest.h>

#include "conformance/bench/bench_report.h"

namespace specgate::cli {
namespace {

using Ticks = std::vector<double>;

TEST(BenchReport, NiceTicksReachTheTopInStepsOfOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_EQ(nice_ticks(137.3), (Ticks{0, 50, 100, 150}));
  EXPECT_EQ(nice_ticks(100), (Ticks{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(nice_ticks(4.22), (Ticks{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(nice_ticks(1.9), (Ticks{0, 0.5, 1, 1.5, 2}));
  EXPECT_EQ(nice_ticks(0).size(), 6u);
  EXPECT_DOUBLE_EQ(nice_ticks(0).back(), 1);
  EXPECT_DOUBLE_EQ(nice_ticks(0.3).back(), 0.3);
  for (double top = 1e-4; top < 1e7; top *= 1.37) {
    const Ticks ticks = nice_ticks(top);
    ASSERT_GE(ticks.size(), 4u) << top;
    ASSERT_LE(ticks.size(), 6u) << top;
    const double step = ticks[1], mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9)
        << "top " << top << ", step " << step;
    EXPECT_EQ(ticks[0], 0) << top;
    EXPECT_GE(ticks.back(), top * (1 - 1e-9)) << top;
    EXPECT_LT(ticks[ticks.size() - 2], top) << top;
  }
}

// `tokens` in each of `run_seconds`, the median run's time the mean of two.
Measurement measured(Engine engine, int64_t batch_size, std::vector<double> run_seconds) {
  Measurement m{.engine = engine, .batch_size = batch_size, .run_seconds = run_seconds, .tokens = 100};
  m.seconds = run_seconds.size() == 2 ? (run_seconds[0] + run_seconds[1]) / 2 : run_seconds[0];
  m.stats.verify_seconds = 0.9;
  m.stats.realign_seconds = 0.1;
  return m;
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(BenchReport, SvgMarksEveryPointWithItsValueAndTheSpreadOfItsRepeats) {
  const std::vector<Measurement> measurements = {
      measured(Engine::kNonspecBatch, 1, {1.0, 1.0}), measured(Engine::kEqspec, 1, {0.5, 0.5}),
      measured(Engine::kNonspecBatch, 2, {1.0, 1.0}), measured(Engine::kEqspec, 2, {0.4, 0.5})};
  const std::string svg = results_svg(measurements, "bench <K=4> & co");
  EXPECT_NE(svg.find("bench &lt;K=4&gt; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find(">speedup vs nonspec-batch, same batch size</text>"), std::string::npos);
  EXPECT_EQ(occurrences(svg, "stroke-dasharray"), 1u);
  // Four points on the tokens/s and realign charts, eqspec's two on the speedup chart.
  EXPECT_EQ(occurrences(svg, "<circle"), 10u);
  EXPECT_EQ(occurrences(svg, "<title>"), 10u);
  EXPECT_EQ(occurrences(svg, "class='spread'"), 6u);
  EXPECT_NE(svg.find("<title>eqspec, batch size 2: 222.2 tokens/s (200.0-250.0 over 2 repeats)</title>"),
            std::string::npos);
  EXPECT_NE(svg.find("<title>eqspec, batch size 2: 2.22x (2.00-2.50 over 2 repeats)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>nonspec-batch, batch size 1: 10.0%</title>"), std::string::npos);

  const std::vector<Measurement> once = {measured(Engine::kNonspecBatch, 1, {1.0}),
                                         measured(Engine::kEqspec, 1, {0.5})};
  const std::string single = results_svg(once, "once");
  EXPECT_EQ(occurrences(single, "<circle"), 5u);
  EXPECT_EQ(occurrences(single, "class='spread'"), 0u);
  EXPECT_NE(single.find("<title>eqspec, batch size 1: 2.00x</title>"), std::string::npos);
}


TEST(BenchReport, TheTableAndTheMarkdownReportShowTheSameCells) {
  const std::vector<Measurement> measurements = {
      measured(Engine::kNonspecBatch, 1, {1.0, 1.0}), measured(Engine::kEqspec, 1, {0.5, 0.5}),
      measured(Engine::kNonspecBatch, 2, {1.0, 1.0}), measured(Engine::kEqspec, 2, {0.4, 0.5})};
  const std::vector<std::vector<std::string>> rows = table_rows(measurements);
  ASSERT_EQ(rows.size(), 4u);
  for (const std::vector<std::string>& row : rows) EXPECT_EQ(row.size(), table_header().size());
  EXPECT_EQ(rows[1][0], "eqspec");
  EXPECT_EQ(rows[1][2], "200.0") << "100 tokens in 0.5 s";
  EXPECT_EQ(rows[3][3], "2.22 [2.00-2.50]") << "the median run against nonspec-batch's, then each repeat's";
  EXPECT_EQ(rows[0][7], "10.0%") << "realign: 0.1 s of 1 s";

  const std::string markdown = results_markdown(measurements, "bench, K=4", {{"target", "t"}, {"repeats", "2"}});
  EXPECT_EQ(markdown.rfind("# bench, K=4\n\ntarget: t · repeats: 2\n\n| engine | batch | tok/s |", 0), 0u) << markdown;
  EXPECT_EQ(occurrences(markdown, "\n| eqspec | "), 2u);
  EXPECT_NE(markdown.find("| 2.22 [2.00-2.50] |"), std::string::npos);
  EXPECT_NE(markdown.find("`accepted/drafted`: accepted of drafted tokens"), std::string::npos);
}

}  // namespace
}  // namespace specgate::cli
