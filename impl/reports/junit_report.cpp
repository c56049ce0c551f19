#include "impl/reports/junit_report.h"

#include <string>
#include <vector>

#include "impl/reports/markup.h"
#include "impl/reports/report_text.h"

namespace specgate {
namespace {

struct TestCase {
  std::string classname, name;
  bool failed = false;
  std::string type, message, details;
};

struct TestSuite {
  std::string name;
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<TestCase> cases;
};

std::string attribute(const char* name, const std::string& value) {
  return std::string(" ") + name + "=\"" + escape_markup(value) + "\"";
}

TestCase question_case(const ItemResult& item) {
  TestCase test{.classname = "specgate." + item.subtask + "." + item.category,
                .name = "question " + std::to_string(item.question_id)};
  if (item.comparison.exact) return test;
  test.failed = true;
  test.message = divergence_summary(item);
  test.type = item.missing           ? "missing"
              : item.prompt_mismatch ? "prompt_mismatch"
                                     : std::string(attribution_name(item.divergence->attribution.kind));
  test.details = "reference line " + std::to_string(item.reference_line);
  if (item.missing || item.prompt_mismatch) return test;
  const ItemDivergence& d = *item.divergence;
  test.details += ", candidate line " + std::to_string(*item.candidate_line) + "\nunit: " + std::string(unit_name(*item.unit)) +
                  "\npartial match: " + short_number(item.comparison.partial) + " (lcp " +
                  std::to_string(item.comparison.lcp) + " of " + std::to_string(item.comparison.reference_length) +
                  ")\nbefore:    " + symbols_label(*item.unit, d.before) +
                  "\nreference: " + symbols_label(*item.unit, d.reference_after) +
                  "\ncandidate: " + symbols_label(*item.unit, d.candidate_after);
  return test;
}

std::vector<TestSuite> suites_of(const ScoreReport& report) {
  std::vector<TestSuite> suites;
  for (const auto& [subtask, group] : report.by_subtask) {
    TestSuite suite{.name = subtask,
                    .properties = {{"exact_match", group.exact_match ? short_number(*group.exact_match, 6) : "none"},
                                   {"partial_match", group.partial_match ? short_number(*group.partial_match, 6) : "none"}}};
    for (const ItemResult& item : report.items) {
      if (item.subtask == subtask) suite.cases.push_back(question_case(item));
    }
    suites.push_back(std::move(suite));
  }
  TestSuite ids{.name = "question_ids"};
  for (int64_t id : report.unexpected_ids)
    ids.cases.push_back({.classname = "specgate.question_ids", .name = "unexpected question " + std::to_string(id),
                         .failed = true, .type = "unexpected",
                         .message = "the candidate answers question " + std::to_string(id) + ", which the reference lacks"});
  if (!ids.cases.empty()) suites.push_back(std::move(ids));
  TestCase gate{.classname = "specgate.gate", .name = "gate", .failed = !report.gate.passed, .type = "gate"};
  for (const std::string& reason : report.gate.reasons) gate.details += reason + "\n";
  if (gate.failed) gate.message = report.gate.reasons.front();
  TestSuite gate_suite{.name = "gate", .cases = {gate}};
  if (!report.settings.eos_ids.empty()) {
    gate_suite.properties = {{"reference_ended_with_eos", std::to_string(report.reference_ended_with_eos)},
                             {"candidate_ended_with_eos", std::to_string(report.candidate_ended_with_eos)}};
  }
  suites.push_back(std::move(gate_suite));
  return suites;
}

int64_t failures_in(const TestSuite& suite) {
  int64_t failures = 0;
  for (const TestCase& test : suite.cases) failures += test.failed ? 1 : 0;
  return failures;
}

}  // namespace

void write_junit_report(const ScoreReport& report, std::ostream& out) {
  const std::vector<TestSuite> suites = suites_of(report);
  int64_t tests = 0, failures = 0;
  for (const TestSuite& suite : suites) {
    tests += static_cast<int64_t>(suite.cases.size());
    failures += failures_in(suite);
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites" << attribute("name", "specgate score") << attribute("tests", std::to_string(tests))
      << attribute("failures", std::to_string(failures)) << attribute("errors", "0")
      << attribute("timestamp", report.generated_at) << ">\n";
  for (const TestSuite& suite : suites) {
    out << "  <testsuite" << attribute("name", suite.name) << attribute("tests", std::to_string(suite.cases.size()))
        << attribute("failures", std::to_string(failures_in(suite))) << attribute("errors", "0")
        << attribute("skipped", "0") << ">\n";
    if (!suite.properties.empty()) {
      out << "    <properties>\n";
      for (const auto& [name, value] : suite.properties)
        out << "      <property" << attribute("name", name) << attribute("value", value) << "/>\n";
      out << "    </properties>\n";
    }
    for (const TestCase& test : suite.cases) {
      out << "    <testcase" << attribute("classname", test.classname) << attribute("name", test.name);
      if (!test.failed) {
        out << "/>\n";
        continue;
      }
      out << ">\n      <failure" << attribute("type", test.type) << attribute("message", test.message) << ">"
          << escape_markup(test.details) << "</failure>\n    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
}

}  // namespace specgate
