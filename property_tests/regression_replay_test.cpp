#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"
#include "property_tests/properties/decode_properties.h"
#include "property_tests/properties/regression_file.h"

namespace specgate::props {
namespace {

// Every counterexample under fixtures/regressions/ holds on the decoders as they are, and a
// case found under an injected fault still catches that fault.
TEST(Regressions, EveryCaseFileReplays) {
  int64_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SPECGATE_REGRESSIONS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    const RegressionCase regression = read_regression(entry.path());
    const DecodeProperty& property = decode_property(regression.property);
    const CaseFailure clean = property.check(regression.decode_case, FaultSet{});
    EXPECT_FALSE(clean.has_value()) << *clean;
    if (regression.fault) {
      FaultSet faults;
      faults.add(*regression.fault);
      const CaseFailure faulty = property.check(regression.decode_case, faults);
      EXPECT_TRUE(faulty.has_value()) << "no longer catches " << fault_name(*regression.fault);
      if (faulty) std::cout << "[" << entry.path().filename().string() << " / " << fault_name(*regression.fault) << "] " << *faulty << "\n";
    }
  }
  EXPECT_GT(files, 0) << "no case files in " << SPECGATE_REGRESSIONS_DIR;
}

// A case file with a bad field is refused with the file and the field.
TEST(Regressions, MalformedCaseFilesNameTheFileAndField) {
  const auto dir = std::filesystem::temp_directory_path() / ("specgate_regressions_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const RegressionCase valid = read_regression(*std::filesystem::directory_iterator(SPECGATE_REGRESSIONS_DIR));
  const std::filesystem::path file = write_regression(dir, valid);
  std::ifstream in(file);
  const nlohmann::json json = nlohmann::json::parse(in);
  const std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> breakages = {
      {"field 'property'", [](nlohmann::json& j) { j["property"] = "no-such-property"; }},
      {"field 'k'", [](nlohmann::json& j) { j["case"]["k"] = 0; }},
      {"field 'fault'", [](nlohmann::json& j) { j["fault"] = 3; }},
      {"unknown fault 'no-such-fault'", [](nlohmann::json& j) { j["fault"] = "no-such-fault"; }},
      {"field 'prompts[1][0]'", [](nlohmann::json& j) { j["case"]["prompts"] = {{1, 2}, {999}}; }},
      {"field 'target.family'", [](nlohmann::json& j) { j["case"]["target"]["family"] = "gpt2"; }},
      {"field 'k': 9223372036854775808 is out of range", [](nlohmann::json& j) { j["case"]["k"] = 9223372036854775808ull; }},
      {"field 'sampling.seed': expected a non-negative integer, got number -1", [](nlohmann::json& j) { j["case"]["sampling"]["seed"] = -1; }},
      {"field 'prompts[0][0]': expected an integer in [0,", [](nlohmann::json& j) { j["case"]["prompts"][0][0] = 1.5; }},
  };
  for (const auto& [expected, breakage] : breakages) {
    nlohmann::json broken = json;
    breakage(broken);
    std::ofstream(file) << broken.dump();
    try {
      read_regression(file);
      ADD_FAILURE() << "accepted a file with a bad " << expected;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  std::ofstream(file) << R"({"format": "specgate-regression/1", "property": "x", "k": 1e400})";
  try {
    read_regression(file);
    ADD_FAILURE() << "accepted 1e400";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), file.string() + ": not valid JSON at line 1, column 59: number overflow parsing '1e400'");
  }
  remove_tree(dir);
}

}  // namespace
}  // namespace specgate::props
