#include "impl/scoring/sampling_check.h"

#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "impl/sampling/sampling.h"
#include "impl/scoring/logits_source.h"
#include "impl/scoring/pit_shift.h"
#include "impl/scoring/rescorer.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

TEST(PitLawShift, IsTheLawOfTheTokensPitDrawnFromTheEngineLessTheUniform) {
  // Two tokens of mass 1/2 (id order breaks the tie): PIT intervals [0, 1/2) and [1/2, 1). Drawn
  // 3/4 and 1/4, the PIT's CDF is 3u/2 below 1/2 and 3/4 + (u - 1/2)/2 above.
  const at::Tensor reference = at::tensor({0.5, 0.5, 0.0}, at::kDouble).unsqueeze(0);
  const at::Tensor engine = at::tensor({0.75, 0.25, 0.0}, at::kDouble).unsqueeze(0);
  const at::Tensor shift = pit_law_shift(reference, engine);
  ASSERT_EQ(shift.sizes(), (at::IntArrayRef{1, kPitShiftPoints}));
  const auto at_point = [&](int64_t j) { return shift[0][j].item<double>(); };
  const auto u = [](int64_t j) { return (static_cast<double>(j) + 0.5) / kPitShiftPoints; };
  for (const int64_t j : {int64_t{0}, int64_t{100}, kPitShiftPoints / 2 - 1}) EXPECT_NEAR(at_point(j), u(j) / 2, 1e-12);
  for (const int64_t j : {kPitShiftPoints / 2, int64_t{900}, kPitShiftPoints - 1}) EXPECT_NEAR(at_point(j), (1 - u(j)) / 2, 1e-12);
  // The engine's mass outside the support is not drawn into the PIT: the law is conditioned on it.
  const at::Tensor spilling = at::tensor({0.6, 0.2, 0.2}, at::kDouble).unsqueeze(0);
  EXPECT_NEAR(pit_law_shift(reference, spilling)[0][100].item<double>(), u(100) / 2, 1e-12);
  EXPECT_EQ(pit_law_shift(reference, reference).abs().max().item<double>(), 0.0);
  EXPECT_EQ(pit_law_shift(reference, at::tensor({0.0, 0.0, 1.0}, at::kDouble).unsqueeze(0)).abs().max().item<double>(), 0.0);
}

constexpr int64_t kTableVocab = 24;

// Logits that depend on the token before each position alone, a fixed random table, multiplied
// by `scale`: scales a little off 1 stand for kernels that round otherwise, systematically.
class TableLogits final : public LogitsSource {
 public:
  explicit TableLogits(double scale) : table_(random_table() * scale) {}
  const at::Tensor& table() const { return table_; }
  int64_t vocab_size() const override { return kTableVocab; }
  const std::vector<int64_t>& eos_token_ids() const override { return no_eos_; }
  std::optional<KnownLogits> logits_before(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                           std::string&) const override {
    std::vector<int64_t> before = {prompt.back()};
    before.insert(before.end(), generated.begin(), generated.end() - 1);
    return KnownLogits{{table_.index_select(0, at::tensor(before, at::kLong))}, {}, {}};
  }

 private:
  // The same table for every scale.
  static at::Tensor random_table() {
    at::Generator generator = at::detail::createCPUGenerator(7);
    return 2.0 * at::randn({kTableVocab, kTableVocab}, generator, at::TensorOptions().dtype(at::kDouble));
  }
  at::Tensor table_;
  std::vector<int64_t> no_eos_;
};

class RoundingAllowance : public TempFolderTest {
 protected:
  // `answers` answers of `length` tokens drawn at T 1 from TableLogits(scale), one subtask.
  std::filesystem::path draw(double scale, int answers, int length, uint64_t seed) {
    const TableLogits engine(scale);
    // Row t: the distribution after token t.
    const at::Tensor distributions = sampling_distribution(engine.table(), kWarpers);
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const std::filesystem::path file = dir_ / ("answers-" + std::to_string(seed) + ".jsonl");
    std::ofstream out(file);
    for (int a = 0; a < answers; ++a) {
      const std::vector<int64_t> prompt = {static_cast<int64_t>(a % kTableVocab)};
      std::vector<int64_t> tokens;
      for (int i = 0; i < length; ++i) {
        const int64_t before = tokens.empty() ? prompt.back() : tokens.back();
        const at::Tensor row = distributions[before].cumsum(0);
        const double u = uniform(random);
        tokens.push_back(std::min<int64_t>(at::searchsorted(row, at::tensor({u}, at::kDouble)).item<int64_t>(), kTableVocab - 1));
      }
      out << nlohmann::json{{"question_id", a + 1},
                            {"category", "qa"},
                            {"choices", {{{"turns", {"x"}}, {"token_ids", {tokens}}, {"prompt_token_ids", {prompt}}}}}}
                 .dump()
          << "\n";
    }
    return file;
  }

  SamplingCheckReport check(const std::filesystem::path& answers, const Rescorer* in_engine_dtype) {
    return check_sampling({.answers = {answers},
                           .rescorer = &reference_,
                           .in_engine_dtype = in_engine_dtype,
                           .sampling = kWarpers,
                           .pit_seed = 3,
                           .margin = {.engine_dtype = "bfloat16", .source = "flag", .logits = 4.0, .mass = 0.12}});
  }

  static constexpr SamplingParams kWarpers{.temperature = 1.0};
  Rescorer reference_{std::make_unique<TableLogits>(1.0)};
  // specgate's own re-scoring in the engine's dtype: logits 4% off.
  Rescorer rounded_{std::make_unique<TableLogits>(1.04)};
};

// A correct engine of a rounding dtype never draws from the float64 distribution exactly, and the
// test of "uniform" rejects it once the tokens are enough. The null the test holds is "within the
// allowance of uniform", the allowance measured with specgate's re-scoring in that dtype: an
// engine whose kernels round otherwise (here 6% off where specgate's is 4%) passes, an engine
// farther off is rejected all the same.
TEST_F(RoundingAllowance, PassesAnEngineThatRoundsOtherwiseAndRejectsOneFartherOff) {
  const std::filesystem::path rounding = draw(1.06, 100, 200, 1);
  const SamplingCheckReport plain = check(rounding, nullptr);
  ASSERT_EQ(plain.groups.size(), 1u);
  EXPECT_TRUE(plain.rejected) << "D " << plain.groups[0].test.distance << ", p " << plain.groups[0].p_value;
  EXPECT_EQ(plain.groups[0].rounding_allowance, 0.0);

  const SamplingCheckReport allowed = check(rounding, &rounded_);
  const SampledGroup& group = allowed.groups.at(0);
  EXPECT_FALSE(allowed.rejected) << "D " << group.test.distance << ", allowance " << group.rounding_allowance;
  EXPECT_GT(group.rounding_shift, 0.0);
  EXPECT_DOUBLE_EQ(group.rounding_allowance, kRoundingShiftTolerance * group.rounding_shift);

  const SamplingCheckReport farther = check(draw(1.25, 100, 200, 2), &rounded_);
  EXPECT_TRUE(farther.rejected) << "D " << farther.groups.at(0).test.distance << ", allowance "
                                << farther.groups.at(0).rounding_allowance;
}

}  // namespace
}  // namespace specgate
