#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/reports/html_report.h"
#include "impl/reports/json_report.h"
#include "impl/reports/junit_report.h"
#include "impl/reports/report_text.h"
#include "impl/reports/markdown_report.h"
#include "impl/reports/markup.h"
#include "impl/reports/svg_charts.h"
#include "impl/scoring/scorer.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

size_t occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

class ScoreReportsTest : public TempFolderTest {
 protected:
  void SetUp() override {
    TempFolderTest::SetUp();
    const auto write = [this](const std::string& name, const std::vector<std::string>& lines) {
      std::ofstream out(dir_ / name, std::ios::binary);
      for (const std::string& line : lines) out << line << "\n";
      return dir_ / name;
    };
    // A category with markup in it, a text divergence at a '<', a missing and an unexpected id.
    report_ = score_answers(
        {.reference = write("reference.jsonl",
                            {R"({"question_id": 1, "category": "writing", "token_ids": [1, 2, 3]})",
                             R"({"question_id": 2, "category": "<b>odd</b> & \"cat\"", "text": "x<y"})",
                             R"({"question_id": 3, "category": "qa", "token_ids": [4]})"}),
         .candidate = write("candidate.jsonl",
                            {R"({"question_id": 1, "category": "writing", "token_ids": [1, 2, 3]})",
                             R"({"question_id": 2, "text": "x>y"})", R"({"question_id": 7, "token_ids": [4]})"})});
  }

  ScoreReport report_;
};

TEST_F(ScoreReportsTest, JsonHoldsTheFiguresTheSchemaNames) {
  const nlohmann::ordered_json json = score_report_json(report_);
  EXPECT_EQ(json["schema_version"], kScoreReportSchemaVersion);
  EXPECT_EQ(json["summary"]["questions"], 3);
  EXPECT_EQ(json["summary"]["exact"], 1);
  EXPECT_DOUBLE_EQ(json["summary"]["exact_match"].get<double>(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(json["summary"]["partial_match"].get<double>(), (1.0 + 1.0 / 3.0) / 3.0);
  EXPECT_EQ(json["summary"]["unit"], "mixed");
  EXPECT_EQ(json["summary"]["divergences"]["unattributed"], 1);
  EXPECT_EQ(json["by_subtask"]["mt_bench"]["questions"], 1);
  EXPECT_EQ(json["by_category"]["qa"]["subtask"], "qa");
  EXPECT_EQ(json["missing_ids"], nlohmann::json::array({3}));
  EXPECT_EQ(json["unexpected_ids"], nlohmann::json::array({7}));
  const auto& text_item = json["items"][1];
  EXPECT_EQ(text_item["unit"], "code_points");
  EXPECT_EQ(text_item["first_divergence"]["reference_token"], int64_t{'<'});
  EXPECT_EQ(text_item["first_divergence"]["reference_text"], "<");
  EXPECT_EQ(text_item["first_divergence"]["context"]["candidate"], ">y");
  EXPECT_EQ(json["items"][2]["status"], "missing");
  EXPECT_TRUE(json["items"][2]["first_divergence"].is_null());
  EXPECT_EQ(json["gate"]["passed"], false);
  EXPECT_EQ(json["gate"]["reasons"].size(), 3u);
  EXPECT_EQ(json["inputs"]["reference"]["answers"], 3);
}

TEST_F(ScoreReportsTest, JunitHasASuitePerSubtaskAndACasePerQuestion) {
  std::ostringstream out;
  write_junit_report(report_, out);
  const std::string xml = out.str();
  EXPECT_EQ(occurrences(xml, "<testsuite "), 5u);  // mt_bench, the odd category, qa, question_ids, gate
  EXPECT_EQ(occurrences(xml, "<testcase "), 5u);
  EXPECT_EQ(occurrences(xml, "<failure "), 4u);  // question 2, missing 3, unexpected 7, the gate
  EXPECT_NE(xml.find(R"(<testsuite name="&lt;b&gt;odd&lt;/b&gt; &amp; &quot;cat&quot;")"), std::string::npos);
  EXPECT_NE(xml.find(R"(<testcase classname="specgate.mt_bench.writing" name="question 1"/>)"), std::string::npos);
  EXPECT_NE(xml.find(R"(<testsuites name="specgate score" tests="5" failures="4")"), std::string::npos);
  EXPECT_EQ(xml.find("<b>"), std::string::npos);
}

TEST_F(ScoreReportsTest, MarkdownHasTheSummaryTable) {
  std::ostringstream out;
  write_markdown_report(report_, out);
  const std::string markdown = out.str();
  EXPECT_EQ(markdown.rfind("## ❌ specgate score: FAILED\n", 0), 0u);
  EXPECT_NE(markdown.find("| mt\\_bench | 1 | 100.0% | 100.0% | 0 | 0 | 0 | 0 | 0 |\n"), std::string::npos);
  EXPECT_NE(markdown.find("| qa | 1 | 0.0% | 0.0% | 0 | 0 | 0 | 0 | 1 |\n"), std::string::npos);
  EXPECT_NE(markdown.find("| **all** | 3 | 33.3% | 44.4% | 0 | 0 | 1 | 0 | 1 |\n"), std::string::npos);
  EXPECT_NE(markdown.find("&lt;b&gt;odd&lt;/b&gt; &amp; \"cat\""), std::string::npos);
}

TEST_F(ScoreReportsTest, HtmlIsOneSelfContainedPageWithCharts) {
  std::ostringstream out;
  write_html_report(report_, out);
  const std::string html = out.str();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(occurrences(html, "<svg "), 2u);
  EXPECT_EQ(occurrences(html, "http"), 2u);  // the SVG namespace of each chart, nothing fetched
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<b>odd"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;odd"), std::string::npos);
  // One bar per subtask and series plus "all", each titled with its value.
  EXPECT_EQ(occurrences(html, "exact match 100.0%</title>"), 1u);
  EXPECT_EQ(occurrences(html, ": exact match "), 4u);
  EXPECT_NE(html.find("position 1: 1 unattributed"), std::string::npos);
}

TEST(Markup, ShortNumbersWriteWholeNumbersPastTheirDigitsInFull) {
  EXPECT_EQ(short_number(1020.4, 3), "1020");
  EXPECT_EQ(short_number(97.46, 3), "97.5");
  EXPECT_EQ(short_number(0.0106, 3), "0.0106");
  EXPECT_EQ(short_number(2.5e20, 3), "2.5e+20");
}

TEST(Markup, EscapesMarkupAndReplacesWhatXmlForbids) {
  EXPECT_EQ(escape_markup("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(escape_markup("ok\x01\xFFz\té"), "ok\xEF\xBF\xBD\xEF\xBF\xBDz\té");
}

TEST(SvgCharts, BinsPositionsInNiceWidths) {
  const std::vector<HistogramBin> narrow = bin_positions({{0, 0}, {3, 1}, {3, 1}}, 2, 40);
  ASSERT_EQ(narrow.size(), 4u);
  EXPECT_EQ(narrow[3].begin, 3);
  EXPECT_EQ(narrow[3].end, 4);
  EXPECT_EQ(narrow[3].counts, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(narrow[0].counts, (std::vector<int64_t>{1, 0}));

  const std::vector<HistogramBin> wide = bin_positions({{0, 0}, {1023, 0}, {999, 0}}, 1, 40);
  ASSERT_EQ(wide.size(), 21u);  // width 50
  EXPECT_EQ(wide[0].end, 50);
  EXPECT_EQ(wide[19].counts[0], 1);
  EXPECT_EQ(wide[20].counts[0], 1);
  EXPECT_TRUE(bin_positions({}, 1, 40).empty());
}

}  // namespace
}  // namespace specgate
