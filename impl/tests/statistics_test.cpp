#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impl/statistics/bernoulli_sum.h"
#include "impl/statistics/kolmogorov.h"
#include "impl/statistics/multiple_testing.h"
#include "impl/statistics/permutation_ks.h"
#include "impl/statistics/poisson_binomial.h"
#include "impl/statistics/rate_comparison.h"
#include "impl/statistics/randomized_pit.h"
#include "impl/statistics/uniformity.h"

namespace specgate {
namespace {

constexpr double kGoldenStep = 0.6180339887498949;  // (sqrt(5) - 1) / 2
constexpr double kSilverStep = 0.41421356237309515;  // sqrt(2) - 1
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// frac(k step + shift) for k = 1..n, bent by x + bend x (1 - x) away from uniform and, with
// levels, rounded down to multiples of 1 / levels (ties). numpy computes the same values with
//   x = np.fmod(np.arange(1, n + 1) * step + shift, 1.0); y = x + bend * x * (1.0 - x)
//   y = np.floor(y * levels) / levels
// which is how the scipy figures below were made.
std::vector<double> bent_sequence(int n, double step, double shift, double bend, int levels = 0) {
  std::vector<double> values;
  for (int k = 1; k <= n; ++k) {
    const double x = std::fmod(k * step + shift, 1.0);
    const double y = x + bend * x * (1.0 - x);
    values.push_back(levels > 0 ? std::floor(y * levels) / levels : y);
  }
  return values;
}

double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::vector<double> uniforms(std::mt19937_64& rng, int n) {
  std::vector<double> values(n);
  for (double& value : values) value = uniform(rng);
  return values;
}

// Binomial(2000, 0.05) lies outside [60, 146] with probability 7.6e-6 (scipy.stats.binom: 4.0e-6
// below 60, 3.6e-6 above 146), i.e. a false-alarm rate within [3.0%, 7.3%]. The tests' exact
// sizes are 0.0500 (one sample, n = 500; kstwo.sf) and 0.0494 (500 against 400; D on its
// lattice of 1/2000, ks_2samp's exact law).
constexpr int kCalibrationTrials = 2000;
constexpr int kFewestFalseAlarms = 60;
constexpr int kMostFalseAlarms = 146;

// Relative agreement of two computations of the same double-precision formula.
constexpr double kSameFormula = 1e-12;
// Stephens' corrected asymptotic p-value against the exact one: within 4.8% on the samples
// below (one sample at most 3.9%, at p = 1.2e-6; two samples at most 4.8%, at p = 2.8e-5).
// The uncorrected asymptotic p-value is off by up to 18% on the same samples.
constexpr double kStephensAccuracy = 0.06;

double relative_error(double actual, double expected) { return std::abs(actual - expected) / expected; }

std::string text(double value) { return (testing::Message() << value).GetString(); }

TEST(KolmogorovSurvival, MatchesScipySpecialKolmogorov) {
  // scipy.special.kolmogorov(lambda).
  const struct {
    double lambda;
    double survival;
  } cases[] = {
      {0.05, 1.0},
      {0.1, 1.0},
      {0.15, 1.0},
      {0.2, 0.999999999999495},
      {0.3, 0.9999906941986655},
      {0.5, 0.9639452436648751},
      {0.8, 0.5441424115741981},
      {0.99, 0.2808738392255489},
      {1.0, 0.26999967167735456},
      {1.01, 0.25943416909359746},
      {1.2, 0.11224966667072497},
      {1.6, 0.011952043239196616},
      {2.0, 0.0006709252557796953},
      {3.0, 3.045995948942526e-08},
      {4.0, 2.532833109818835e-14},
      {6.0, 1.0760372320042276e-31},
  };
  for (const auto& c : cases) {
    EXPECT_LE(relative_error(kolmogorov_survival(c.lambda), c.survival), kSameFormula) << "lambda " << c.lambda;
  }
  EXPECT_EQ(kolmogorov_survival(0.0), 1.0);
  EXPECT_EQ(kolmogorov_survival(-1.0), 1.0);
}

TEST(KolmogorovUpperQuantile, MatchesScipySpecialKolmogi) {
  EXPECT_LE(relative_error(kolmogorov_upper_quantile(0.05), 1.3580986393225507), kSameFormula);
  EXPECT_LE(relative_error(kolmogorov_upper_quantile(0.01), 1.6276236115189504), kSameFormula);
  EXPECT_LE(relative_error(kolmogorov_upper_quantile(0.5), 0.8275735551899059), kSameFormula);
  EXPECT_THROW(kolmogorov_upper_quantile(0.0), std::invalid_argument);
  EXPECT_THROW(kolmogorov_upper_quantile(1.0), std::invalid_argument);
}

// scipy 1.17: kstest(x, 'uniform', method='asymp') gives D and kolmogorov(sqrt(n) D), the plain
// asymptotic p-value; kolmogorov((sqrt(n) + 0.12 + 0.11 / sqrt(n)) D) is the corrected one this code
// returns;
// kstest(..., method='exact') the exact one.
TEST(KsUniformityTest, MatchesScipyOnFixedSamples) {
  const struct {
    int n;
    double shift, bend;
    int levels;
    double distance, asymptotic_p, stephens_p, exact_p;
  } cases[] = {
      {40, 0.0, 0.5, 0, 0.14964184367376637, 0.3319031978472121, 0.3070909369193322, 0.30104626203106644},
      {60, 0.4, 0.1, 0, 0.04378688513135448, 0.999837388822092, 0.9997703973638269, 0.9995451508616846},
      {80, 0.9, 0.05, 0, 0.018939365527549656, 1.0, 1.0, 0.9999999999999981},
      {100, 0.3, 0.3, 0, 0.07697757132002714, 0.5940025134575668, 0.5772305123942741, 0.5674228346596897},
      {120, 0.2, -0.2, 32, 0.08750000000000002, 0.3171448795475895, 0.30367955158625504, 0.29946119199163},
      {250, 0.7, 0.25, 0, 0.06576265888394706, 0.22975527131670628, 0.22191656935710863, 0.21990496894062828},
      {300, 0.0, 0.6, 0, 0.15371822437799998, 1.3924742976808375e-06, 1.13142809534023e-06, 1.1771815353223839e-06},
      {500, 0.1, 0.36, 0, 0.0919930608494296, 0.0004223922962021482, 0.00038418157774475285, 0.0003923865083447086},
      {500, 0.5, 0.0, 0, 0.0030216337839447105, 1.0, 1.0, 1.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("n " + std::to_string(c.n) + ", bend " + std::to_string(c.bend));
    const DistributionTest test =
        ks_uniformity_test(bent_sequence(c.n, kGoldenStep, c.shift, c.bend, c.levels), 0.05);
    EXPECT_EQ(test.n, c.n);
    EXPECT_EQ(test.m, 0);
    EXPECT_EQ(test.effective_n, c.n);
    EXPECT_NEAR(test.distance, c.distance, 1e-12);
    EXPECT_LE(relative_error(kolmogorov_survival(std::sqrt(c.n) * test.distance), c.asymptotic_p), kSameFormula);
    EXPECT_LE(relative_error(test.p_value, c.stephens_p), kSameFormula);
    EXPECT_LE(relative_error(test.p_value, c.exact_p), kStephensAccuracy);
    EXPECT_EQ(test.rejected, c.stephens_p <= 0.05);
  }
}

// scipy 1.17: ks_2samp(a, b, method='asymp') gives D. Its asymptotic p-value is not the
// Kolmogorov law's (it takes kstwo.sf(D, round(n m / (n + m))), the exact one-sample law at that
// size), so the plain figure is scipy.special.kolmogorov(sqrt(n_eff) D); exact_p is
// ks_2samp(a, b, method='exact').
TEST(KsTwoSampleTest, MatchesScipyOnFixedSamples) {
  const struct {
    int n;
    double shift, bend;
    int m;
    double second_shift, second_bend;
    int levels;
    double distance, asymptotic_p, stephens_p, exact_p;
  } cases[] = {
      {40, 0.2, 0.0, 100, 0.0, 0.0, 0, 0.05500000000000005, 0.9999946105338531, 0.9999891875913881, 0.9999712410232846},
      {60, 0.0, 0.4, 45, 0.5, 0.0, 0, 0.11111111111111105, 0.9086920092500215, 0.8905925059649941, 0.8793072802816579},
      {150, 0.0, 0.3, 150, 0.25, 0.0, 64, 0.08000000000000007, 0.7231519162984147, 0.7055070861310422, 0.7249566931207618},
      {200, 0.1, 0.2, 300, 0.9, -0.1, 0, 0.08499999999999996, 0.3512094103233358, 0.3371795463600296, 0.3381632532756778},
      {300, 0.0, 0.5, 250, 0.3, -0.3, 0, 0.20066666666666666, 3.401216805579126e-05, 2.6627566216800782e-05, 2.7954768307621927e-05},
      {500, 0.3, 0.1, 400, 0.6, 0.0, 0, 0.02949999999999997, 0.9903317888873701, 0.9893242510831457, 0.9873637484069744},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("n " + std::to_string(c.n) + ", m " + std::to_string(c.m));
    const std::vector<double> first = bent_sequence(c.n, kGoldenStep, c.shift, c.bend, c.levels);
    const std::vector<double> second = bent_sequence(c.m, kSilverStep, c.second_shift, c.second_bend, c.levels);
    const DistributionTest test = ks_two_sample_test(first, second, 0.05);
    const double effective_n = static_cast<double>(c.n) * c.m / (c.n + c.m);
    EXPECT_EQ(test.n, c.n);
    EXPECT_EQ(test.m, c.m);
    EXPECT_DOUBLE_EQ(test.effective_n, effective_n);
    EXPECT_NEAR(test.distance, c.distance, 1e-12);
    EXPECT_LE(relative_error(kolmogorov_survival(std::sqrt(effective_n) * test.distance), c.asymptotic_p),
              kSameFormula);
    EXPECT_LE(relative_error(ks_p_value(test.distance, effective_n), c.stephens_p), kSameFormula);
    EXPECT_LE(relative_error(ks_p_value(test.distance, effective_n), c.exact_p), kStephensAccuracy);
    EXPECT_LE(relative_error(test.p_value, c.exact_p), 1e-9);
    EXPECT_EQ(ks_two_sample_test(second, first, 0.05).distance, test.distance);
  }
}

// With equal sizes D takes the values k / n, and Stephens' one-sample correction puts the
// rejection at nominal 0.05 at a lattice value whose true probability is 0.059 at n = 64. The
// exact law's rejections are at most alpha: here 20,000 pairs of 64 uniforms each, where a size
// of 0.059 would reject about 1,180 (0.0500 + 3 standard deviations is 1,092).
TEST(KsTwoSampleTest, EqualSizesRejectAtMostAlphaWithTheExactLaw) {
  std::mt19937_64 rng(7);
  int rejections = 0;
  constexpr int kPairs = 20000;
  for (int i = 0; i < kPairs; ++i) rejections += ks_two_sample_test(uniforms(rng, 64), uniforms(rng, 64), 0.05).rejected;
  RecordProperty("rejections", rejections);
  EXPECT_LE(rejections, 1092);
  EXPECT_GE(rejections, 600);
}

// scipy.stats.ks_2samp(a, b, method='exact') for two samples of 64 with D = k / 64.
TEST(KsTwoSampleTest, ExactPValueMatchesScipyOnEqualSizes) {
  EXPECT_NEAR(ks_two_sample_p_value(10.0 / 64, 64, 64), 0.41803800878931696, 1e-9);
  EXPECT_NEAR(ks_two_sample_p_value(15.0 / 64, 64, 64), 0.05917166976306816, 1e-9);
  EXPECT_NEAR(ks_two_sample_p_value(16.0 / 64, 64, 64), 0.03624313869735272, 1e-9);
  EXPECT_NEAR(ks_two_sample_p_value(20.0 / 64, 64, 64), 0.0036549418370471773, 1e-9);
  EXPECT_EQ(ks_two_sample_p_value(0.0, 64, 64), 1.0);
}

TEST(KsUniformityTest, ConfidenceIntervalIsTheDkwBandAroundD) {
  const DistributionTest test = ks_uniformity_test(bent_sequence(200, kGoldenStep, 0.0, 0.5), 0.05);
  const double deviation = std::sqrt(std::log(2.0 / 0.05) / 400.0);
  EXPECT_DOUBLE_EQ(test.distance_low, test.distance - deviation);
  EXPECT_DOUBLE_EQ(test.distance_high, test.distance + deviation);
  EXPECT_EQ(test.alpha, 0.05);

  const DistributionTest near_zero = ks_uniformity_test(bent_sequence(50, kGoldenStep, 0.0, 0.0), 0.05);
  EXPECT_EQ(near_zero.distance_low, 0.0);
  const std::vector<double> all_zero(10, 0.0);
  const DistributionTest extreme = ks_uniformity_test(all_zero, 0.05);
  EXPECT_EQ(extreme.distance, 1.0);
  EXPECT_EQ(extreme.distance_high, 1.0);
  EXPECT_TRUE(extreme.rejected);
}

TEST(KsTwoSampleTest, IdenticalSamplesHaveDistanceZero) {
  const std::vector<double> values = bent_sequence(100, kGoldenStep, 0.0, 0.3);
  const DistributionTest test = ks_two_sample_test(values, values, 0.05);
  EXPECT_EQ(test.distance, 0.0);
  EXPECT_EQ(test.p_value, 1.0);
  EXPECT_FALSE(test.rejected);
}

TEST(DetectableDistance, IsTheCriticalDistancePlusTheHoeffdingMargin) {
  const double critical = 1.3580986393225507 / (std::sqrt(500.0) + 0.12 + 0.11 / std::sqrt(500.0));
  EXPECT_NEAR(ks_detectable_distance(500.0, 0.05), critical + std::sqrt(std::log(10.0) / 1000.0), 1e-12);
  EXPECT_NEAR(ks_detectable_distance(500.0, 0.05), 0.108384, 1e-6);
  EXPECT_GT(ks_detectable_distance(100.0, 0.05), ks_detectable_distance(500.0, 0.05));
  EXPECT_GT(ks_detectable_distance(500.0, 0.01), ks_detectable_distance(500.0, 0.05));
  const DistributionTest test = ks_uniformity_test(bent_sequence(500, kGoldenStep, 0.0, 0.0), 0.05);
  EXPECT_EQ(test.detectable_distance, ks_detectable_distance(500.0, 0.05));
}

TEST(KsUniformityTest, RefusesEmptySamplesValuesOutsideTheUnitIntervalAndBadLevels) {
  const std::vector<double> fine = {0.1, 0.5, 0.9};
  EXPECT_THROW(ks_uniformity_test({}, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_uniformity_test(std::vector<double>{0.1, kNaN}, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_uniformity_test(std::vector<double>{-1e-12, 0.5}, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_uniformity_test(std::vector<double>{0.5, 1.0 + 1e-12}, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_uniformity_test(fine, 0.0), std::invalid_argument);
  EXPECT_THROW(ks_uniformity_test(fine, 1.0), std::invalid_argument);
  EXPECT_THROW(ks_uniformity_test(fine, kNaN), std::invalid_argument);
  EXPECT_NO_THROW(ks_uniformity_test(std::vector<double>{0.0, 1.0}, 0.05));

  EXPECT_THROW(ks_two_sample_test(fine, {}, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_two_sample_test({}, fine, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_two_sample_test(fine, std::vector<double>{kNaN}, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_two_sample_test(std::vector<double>{2.0}, fine, 0.05), std::invalid_argument);
  EXPECT_THROW(ks_two_sample_test(fine, fine, 1.5), std::invalid_argument);
}

TEST(KsUniformityTest, FalseAlarmRateOnUniformSamplesIsAlpha) {
  std::mt19937_64 rng(20240611);
  int ks_rejections = 0;
  int chi_square_rejections = 0;
  for (int trial = 0; trial < kCalibrationTrials; ++trial) {
    const std::vector<double> values = uniforms(rng, 500);
    ks_rejections += ks_uniformity_test(values, 0.05).rejected;
    chi_square_rejections += chi_square_uniformity(uniformity_histogram(values)).p_value <= 0.05;
  }
  RecordProperty("ks_false_alarms", ks_rejections);
  RecordProperty("chi_square_false_alarms", chi_square_rejections);
  EXPECT_GE(ks_rejections, kFewestFalseAlarms);
  EXPECT_LE(ks_rejections, kMostFalseAlarms);
  EXPECT_GE(chi_square_rejections, kFewestFalseAlarms);
  EXPECT_LE(chi_square_rejections, kMostFalseAlarms);
}

TEST(KsTwoSampleTest, FalseAlarmRateOnTwoUniformSamplesIsAlpha) {
  std::mt19937_64 rng(20240612);
  int rejections = 0;
  for (int trial = 0; trial < kCalibrationTrials; ++trial) {
    rejections += ks_two_sample_test(uniforms(rng, 500), uniforms(rng, 400), 0.05).rejected;
  }
  RecordProperty("false_alarms", rejections);
  EXPECT_GE(rejections, kFewestFalseAlarms);
  EXPECT_LE(rejections, kMostFalseAlarms);
}

// Values U^(1/b), CDF x^b for b in (0, 1), at sup-distance from uniform x^b - x at x = b^(1/(1-b)).
double power_alternative_distance(double b) {
  const double x = std::pow(b, 1.0 / (1.0 - b));
  return std::pow(x, b) - x;
}

// The exponent b whose alternative lies at the given sup-distance from uniform, by bisection:
// the distance falls from 1 to 0 as b rises from 0 to 1.
double power_alternative_exponent(double distance) {
  double low = 1e-6;
  double high = 1.0 - 1e-9;
  for (int step = 0; step < 200; ++step) {
    const double middle = 0.5 * (low + high);
    (power_alternative_distance(middle) > distance ? low : high) = middle;
  }
  return 0.5 * (low + high);
}

std::vector<double> power_alternative(std::mt19937_64& rng, int n, double exponent) {
  std::vector<double> values = uniforms(rng, n);
  for (double& value : values) value = std::pow(value, 1.0 / exponent);
  return values;
}

// Uniform with an atom of mass 2 d at 1/2, at sup-distance d from uniform (F - U is -2 d x below
// 1/2 and 2 d (1 - x) from it).
std::vector<double> atom_alternative(std::mt19937_64& rng, int n, double distance) {
  std::vector<double> values = uniforms(rng, n);
  for (double& value : values) {
    if (uniform(rng) < 2.0 * distance) value = 0.5;
  }
  return values;
}

constexpr int kPowerTrials = 1000;

TEST(DetectableDistance, OneSampleTestRejectsAlternativesAtThatDistanceNineTimesInTen) {
  const double distance = ks_detectable_distance(500.0, 0.05);
  const double exponent = power_alternative_exponent(distance);
  ASSERT_NEAR(power_alternative_distance(exponent), distance, 1e-12);
  std::mt19937_64 rng(7);
  int smooth_rejections = 0;
  int atom_rejections = 0;
  for (int trial = 0; trial < kPowerTrials; ++trial) {
    smooth_rejections += ks_uniformity_test(power_alternative(rng, 500, exponent), 0.05).rejected;
    atom_rejections += ks_uniformity_test(atom_alternative(rng, 500, distance), 0.05).rejected;
  }
  RecordProperty("detectable_distance", text(distance));
  RecordProperty("power_smooth_per_mille", smooth_rejections);
  RecordProperty("power_atom_per_mille", atom_rejections);
  EXPECT_GE(smooth_rejections, 900);
  EXPECT_GE(atom_rejections, 900);
  // The bound is not loose by a factor of two: the smooth alternative at half the distance is
  // not detected reliably. (An atom at half the distance still is, nearly: D adds the noise on
  // either side of a jump.)
  const double half_exponent = power_alternative_exponent(distance / 2);
  int half_distance_rejections = 0;
  for (int trial = 0; trial < kPowerTrials; ++trial) {
    half_distance_rejections += ks_uniformity_test(power_alternative(rng, 500, half_exponent), 0.05).rejected;
  }
  RecordProperty("power_smooth_half_distance_per_mille", half_distance_rejections);
  EXPECT_LT(half_distance_rejections, 900);
}

TEST(DetectableDistance, TwoSampleTestRejectsAlternativesAtThatDistanceNineTimesInTen) {
  const double distance = ks_detectable_distance(500.0 * 400.0 / 900.0, 0.05);
  const double exponent = power_alternative_exponent(distance);
  std::mt19937_64 rng(8);
  int rejections = 0;
  for (int trial = 0; trial < kPowerTrials; ++trial) {
    const DistributionTest test = ks_two_sample_test(uniforms(rng, 500), power_alternative(rng, 400, exponent), 0.05);
    EXPECT_EQ(test.detectable_distance, distance);
    rejections += test.rejected;
  }
  RecordProperty("detectable_distance", text(distance));
  RecordProperty("power_per_mille", rejections);
  EXPECT_GE(rejections, 900);
}

// The true distance lies in [distance_low, distance_high] in at least 1 - alpha of the trials.
TEST(ConfidenceInterval, CoversTheTrueDistanceForOneAndTwoSamples) {
  const double distance = 0.08;
  const double exponent = power_alternative_exponent(distance);
  std::mt19937_64 rng(9);
  int one_sample_covered = 0;
  int two_sample_covered = 0;
  for (int trial = 0; trial < kPowerTrials; ++trial) {
    const DistributionTest one = ks_uniformity_test(power_alternative(rng, 300, exponent), 0.05);
    one_sample_covered += one.distance_low <= distance && distance <= one.distance_high;
    const DistributionTest two = ks_two_sample_test(uniforms(rng, 300), power_alternative(rng, 200, exponent), 0.05);
    two_sample_covered += two.distance_low <= distance && distance <= two.distance_high;
  }
  RecordProperty("one_sample_coverage_per_mille", one_sample_covered);
  RecordProperty("two_sample_coverage_per_mille", two_sample_covered);
  EXPECT_GE(one_sample_covered, 950);
  EXPECT_GE(two_sample_covered, 950);
}

TEST(UniformityHistogram, CountsTwentyEqualBinsWithOneInTheLast) {
  const std::vector<double> values = {0.0, 0.049, 0.05, 0.5, 0.5, 0.999, 1.0};
  UniformityHistogram expected{};
  expected[0] = 2;
  expected[1] = 1;
  expected[10] = 2;
  expected[19] = 2;
  EXPECT_EQ(uniformity_histogram(values), expected);
  EXPECT_EQ(uniformity_histogram({}), UniformityHistogram{});
  EXPECT_THROW(uniformity_histogram(std::vector<double>{0.5, kNaN}), std::invalid_argument);
  EXPECT_THROW(uniformity_histogram(std::vector<double>{1.5}), std::invalid_argument);
}

// scipy.stats.chisquare on the same counts (np.minimum((y * 20).astype(int), 19), bincount).
TEST(ChiSquareUniformity, MatchesScipyChisquare) {
  const struct {
    int n;
    double shift, bend;
    double statistic, p_value;
  } cases[] = {
      {200, 0.1, 0.6, 33.0, 0.024040162779150803},
      {500, 0.3, 0.35, 21.68, 0.3004703790063992},
      {1000, 0.2, 0.5, 97.56, 1.4776260843812857e-12},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("n " + std::to_string(c.n));
    const ChiSquareTest test = chi_square_uniformity(uniformity_histogram(bent_sequence(c.n, kGoldenStep, c.shift, c.bend)));
    EXPECT_EQ(test.degrees_of_freedom, 19);
    EXPECT_NEAR(test.statistic, c.statistic, 1e-9);
    EXPECT_LE(relative_error(test.p_value, c.p_value), 1e-9);
  }
  EXPECT_THROW(chi_square_uniformity(UniformityHistogram{}), std::invalid_argument);
}

TEST(HolmBonferroni, TextbookExample) {
  // p = 0.01, 0.04, 0.03, 0.005 at alpha 0.05: 0.005 <= 0.05 / 4 and 0.01 <= 0.05 / 3 are
  // rejected, 0.03 > 0.05 / 2 stops the procedure.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const HolmDecision decision = holm_bonferroni(p, 0.05);
  const std::vector<double> adjusted = {0.03, 0.06, 0.06, 0.02};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_DOUBLE_EQ(decision.adjusted_p_values[i], adjusted[i]) << i;
  EXPECT_EQ(decision.rejected, (std::vector<bool>{true, false, false, true}));
}

TEST(HolmBonferroni, HandComputedExampleWithTiesAndTheMonotoneStep) {
  // Ascending 0.001, 0.0125, 0.0125, 0.2, 0.6 times 5, 4, 3, 2, 1: 0.005, 0.05, 0.0375 (raised to
  // 0.05 by the running maximum), 0.4, 0.6. 0.05 is rejected at alpha 0.05 (<=).
  const HolmDecision decision = holm_bonferroni(std::vector<double>{0.2, 0.001, 0.0125, 0.6, 0.0125}, 0.05);
  const std::vector<double> adjusted = {0.4, 0.005, 0.05, 0.6, 0.05};
  for (size_t i = 0; i < adjusted.size(); ++i) EXPECT_DOUBLE_EQ(decision.adjusted_p_values[i], adjusted[i]) << i;
  EXPECT_EQ(decision.rejected, (std::vector<bool>{false, true, true, false, true}));
}

TEST(HolmBonferroni, RejectsWhatBonferroniWouldNot) {
  // Bonferroni's 0.03, 0.06, 0.09 rejects one; Holm's 0.03, 0.04, 0.04 rejects all three.
  const HolmDecision decision = holm_bonferroni(std::vector<double>{0.03, 0.01, 0.02}, 0.05);
  EXPECT_DOUBLE_EQ(decision.adjusted_p_values[0], 0.04);
  EXPECT_DOUBLE_EQ(decision.adjusted_p_values[1], 0.03);
  EXPECT_DOUBLE_EQ(decision.adjusted_p_values[2], 0.04);
  EXPECT_EQ(decision.rejected, (std::vector<bool>{true, true, true}));
}

TEST(HolmBonferroni, CapsAdjustedPValuesAtOne) {
  const HolmDecision decision = holm_bonferroni(std::vector<double>{0.7, 0.9, 0.3}, 0.05);
  EXPECT_EQ(decision.adjusted_p_values, (std::vector<double>{1.0, 1.0, 0.8999999999999999}));
  EXPECT_EQ(decision.rejected, (std::vector<bool>{false, false, false}));
}

TEST(HolmBonferroni, EmptyFamilyAndRefusals) {
  const HolmDecision none = holm_bonferroni({}, 0.05);
  EXPECT_TRUE(none.adjusted_p_values.empty());
  EXPECT_TRUE(none.rejected.empty());
  EXPECT_THROW(holm_bonferroni(std::vector<double>{0.1, kNaN}, 0.05), std::invalid_argument);
  EXPECT_THROW(holm_bonferroni(std::vector<double>{1.1}, 0.05), std::invalid_argument);
  EXPECT_THROW(holm_bonferroni(std::vector<double>{-0.1}, 0.05), std::invalid_argument);
  EXPECT_THROW(holm_bonferroni(std::vector<double>{0.1}, 0.0), std::invalid_argument);
}

TEST(RandomizedPit, IsTheMassBelowPlusAUniformShareOfTheToken) {
  const std::vector<double> p = {0.1, 0.2, 0.0, 0.3, 0.4};
  EXPECT_DOUBLE_EQ(*randomized_pit(p, 3, 0.5), 0.45);
  EXPECT_DOUBLE_EQ(*randomized_pit(p, 0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(*randomized_pit(p, 1, 0.25), 0.15);
  EXPECT_EQ(*randomized_pit(p, 4, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(*randomized_pit(0.3, 0.3, 0.5), 0.45);
  // Normalised by the sum: twice the masses give the same values.
  const std::vector<double> doubled = {0.2, 0.4, 0.0, 0.6, 0.8};
  EXPECT_DOUBLE_EQ(*randomized_pit(doubled, 3, 0.5), 0.45);
}

TEST(RandomizedPit, MostLikelyFirstCountsTheMoreLikelyTokensBelow) {
  const std::vector<double> p = {0.1, 0.2, 0.0, 0.3, 0.4};  // order: 4, 3, 1, 0, then 2
  EXPECT_DOUBLE_EQ(*randomized_pit_most_likely_first(p, 4, 0.5), 0.2);
  EXPECT_DOUBLE_EQ(*randomized_pit_most_likely_first(p, 3, 0.5), 0.55);
  EXPECT_DOUBLE_EQ(*randomized_pit_most_likely_first(p, 0, 1.0), 1.0);
  EXPECT_EQ(randomized_pit_most_likely_first(p, 2, 0.5), std::nullopt);
  // Ties go by index.
  const std::vector<double> tied = {0.25, 0.25, 0.5};
  EXPECT_DOUBLE_EQ(*randomized_pit_most_likely_first(tied, 0, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(*randomized_pit_most_likely_first(tied, 1, 0.0), 0.75);
  EXPECT_THROW(randomized_pit_most_likely_first(tied, 3, 0.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit_most_likely_first(std::vector<double>{0.5, kNaN}, 0, 0.5), std::invalid_argument);
}

TEST(RandomizedPit, FlagsATokenOutsideTheSupport) {
  const std::vector<double> p = {0.1, 0.2, 0.0, 0.3, 0.4};
  EXPECT_EQ(randomized_pit(p, 2, 0.5), std::nullopt);
  EXPECT_EQ(randomized_pit(0.3, 0.0, 0.5), std::nullopt);
}

TEST(RandomizedPit, RefusesMalformedArguments) {
  const std::vector<double> p = {0.5, 0.5};
  EXPECT_THROW(randomized_pit(p, -1, 0.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit(p, 2, 0.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit(p, 0, 1.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit(p, 0, kNaN), std::invalid_argument);
  EXPECT_THROW(randomized_pit(std::vector<double>{0.5, -0.1}, 0, 0.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit(std::vector<double>{0.5, kNaN}, 0, 0.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit(std::vector<double>{0.0, 0.0}, 0, 0.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit(0.8, 0.3, 0.5), std::invalid_argument);
  EXPECT_THROW(randomized_pit(-0.1, 0.3, 0.5), std::invalid_argument);
}

// Tokens drawn from p by inverse CDF give uniform PIT values under p; drawn from a sharpened p
// they do not.
TEST(RandomizedPit, IsUniformForTokensDrawnFromTheDistribution) {
  const std::vector<double> p = {0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.02};
  std::vector<double> sharpened;
  double sharpened_total = 0.0;
  for (const double mass : p) sharpened_total += mass * mass;
  for (const double mass : p) sharpened.push_back(mass * mass / sharpened_total);
  const auto draw = [](std::mt19937_64& rng, const std::vector<double>& masses) {
    double remaining = uniform(rng);
    size_t token = 0;
    while (token + 1 < masses.size() && remaining >= masses[token]) remaining -= masses[token++];
    return static_cast<int64_t>(token);
  };
  std::mt19937_64 rng(11);
  std::vector<double> faithful;
  std::vector<double> sharp;
  for (int i = 0; i < 2000; ++i) {
    faithful.push_back(*randomized_pit(p, draw(rng, p), uniform(rng)));
    sharp.push_back(*randomized_pit(p, draw(rng, sharpened), uniform(rng)));
  }
  const DistributionTest faithful_test = ks_uniformity_test(faithful, 0.01);
  const DistributionTest sharp_test = ks_uniformity_test(sharp, 0.01);
  RecordProperty("faithful_p_value", text(faithful_test.p_value));
  RecordProperty("sharpened_p_value", text(sharp_test.p_value));
  EXPECT_FALSE(faithful_test.rejected);
  EXPECT_TRUE(sharp_test.rejected);
  EXPECT_TRUE(ks_two_sample_test(faithful, sharp, 0.01).rejected);
}

}  // namespace

namespace {

// Trial k = 1..200 succeeds with probability 0.1 + 0.8 frac(k golden) and is taken to succeed
// when frac(k silver + 0.05) < 0.9 times that: fewer successes than expected. numpy computes the
// same trials as
//   p = 0.1 + 0.8 * np.fmod(k * golden, 1.0); s = np.fmod(k * silver + 0.05, 1.0) < 0.9 * p
// and scipy.stats.norm the figures below.
std::vector<BernoulliTrial> bent_trials() {
  std::vector<BernoulliTrial> trials;
  for (int k = 1; k <= 200; ++k) {
    const double p = 0.1 + 0.8 * std::fmod(k * kGoldenStep, 1.0);
    trials.push_back({p, std::fmod(k * kSilverStep + 0.05, 1.0) < 0.9 * p});
  }
  return trials;
}

}  // namespace

TEST(BernoulliSumTest, MatchesScipyNormOnFixedTrials) {
  const BernoulliSumTest test = bernoulli_sum_test(bent_trials(), 0.05);
  EXPECT_EQ(test.trials, 200);
  EXPECT_EQ(test.observed, 93);
  EXPECT_LT(relative_error(test.expected, 100.38653909831004), kSameFormula);
  EXPECT_LT(relative_error(test.variance, 39.3826095061145), kSameFormula);
  EXPECT_LT(relative_error(test.z, -1.177033317590744), kSameFormula);
  EXPECT_LT(relative_error(test.p_value, 0.2391822083006825), kSameFormula);
  EXPECT_LT(relative_error(test.ratio, 0.9264190282416621), kSameFormula);
  EXPECT_LT(relative_error(test.ratio_low, 0.8038939880083105), kSameFormula);
  EXPECT_LT(relative_error(test.ratio_high, 1.0489440684750135), kSameFormula);
  EXPECT_LT(relative_error(test.detectable_ratio_change, 0.20263985783614313), kSameFormula);
  EXPECT_FALSE(test.rejected);
}

// 93 successes where 100.39 are expected: a shift of -5 that rounding may cause leaves 2.39 to
// test (scipy: 2 norm.sf(2.387 / 6.2756) = 0.70373); a shift the other way, or none, leaves all
// of it; one past the difference leaves nothing.
TEST(BernoulliSumTest, AnAllowedShiftExcusesADifferenceInItsDirectionOnly) {
  EXPECT_LT(relative_error(bernoulli_sum_test(bent_trials(), 0.05, -5.0).p_value, 0.7037292455006734), kSameFormula);
  EXPECT_LT(relative_error(bernoulli_sum_test(bent_trials(), 0.05, 5.0).p_value, 0.2391822083006825), kSameFormula);
  EXPECT_EQ(bernoulli_sum_test(bent_trials(), 0.05, -10.0).p_value, 1.0);
  EXPECT_EQ(bernoulli_sum_test(bent_trials(), 0.05, -5.0).z, bernoulli_sum_test(bent_trials(), 0.05).z);
  EXPECT_THROW(bernoulli_sum_test(bent_trials(), 0.05, INFINITY), std::invalid_argument);
}

TEST(BernoulliSumTest, AnOutcomeACertaintyRulesOutRejects) {
  const BernoulliSumTest accepted_at_zero = bernoulli_sum_test(std::vector<BernoulliTrial>{{0.5, true}, {0.0, true}}, 0.05);
  EXPECT_EQ(accepted_at_zero.ruled_out, 1);
  EXPECT_EQ(accepted_at_zero.p_value, 0.0);
  EXPECT_TRUE(accepted_at_zero.rejected);
  const BernoulliSumTest certain =
      bernoulli_sum_test(std::vector<BernoulliTrial>{{1.0, true}, {0.0, false}, {1.0, true}}, 0.05);
  EXPECT_EQ(certain.variance, 0.0);
  EXPECT_EQ(certain.ruled_out, 0);
  EXPECT_EQ(certain.p_value, 1.0);
  EXPECT_FALSE(certain.rejected);
  EXPECT_TRUE(bernoulli_sum_test(std::vector<BernoulliTrial>{{1.0, false}, {0.0, false}}, 0.05).rejected);
}

TEST(BernoulliSumTest, RefusesNoTrialsProbabilitiesOutsideTheUnitIntervalAndBadLevels) {
  const auto test = [](double p, double alpha) { return bernoulli_sum_test(std::vector<BernoulliTrial>{{p, true}}, alpha); };
  EXPECT_THROW(bernoulli_sum_test({}, 0.05), std::invalid_argument);
  EXPECT_THROW(test(1.5, 0.05), std::invalid_argument);
  EXPECT_THROW(test(kNaN, 0.05), std::invalid_argument);
  EXPECT_THROW(test(0.5, 1.0), std::invalid_argument);
}

// Drafted positions as a speculative round reaches them: probabilities spread over (0, 1), 300
// trials. Under the stated probabilities the test rejects at about alpha; with every success
// probability scaled by 1 - detectable change it rejects about nine times in ten.
TEST(BernoulliSumTest, FalseAlarmRateIsAlphaAndPowerAtTheDetectableChangeIsNinetyPercent) {
  std::mt19937_64 rng(20261125);
  std::vector<double> probabilities;
  for (int i = 0; i < 300; ++i) probabilities.push_back(0.02 + 0.96 * uniform(rng));
  const auto run = [&](double scale) {
    std::vector<BernoulliTrial> trials;
    for (double p : probabilities) trials.push_back({p, uniform(rng) < scale * p});
    return bernoulli_sum_test(trials, 0.05);
  };
  const double change = run(1.0).detectable_ratio_change;
  int false_alarms = 0, detections = 0;
  for (int trial = 0; trial < kCalibrationTrials; ++trial) {
    false_alarms += run(1.0).rejected;
    detections += run(1.0 - change).rejected;
  }
  RecordProperty("false_alarms", false_alarms);
  RecordProperty("detections", detections);
  EXPECT_GE(false_alarms, kFewestFalseAlarms);
  EXPECT_LE(false_alarms, kMostFalseAlarms);
  // Binomial(2000, 0.9) lies within [1746, 1854] with probability 1 - 1e-5.
  EXPECT_GE(detections, 1746);
  EXPECT_LE(detections, 1854);
}

namespace {

// Units whose values share a unit-level shift: dependent within a unit, independent across.
std::vector<SampleUnit> dependent_units(std::mt19937_64& rng, int units, int length, double bend) {
  std::vector<SampleUnit> out;
  for (int u = 0; u < units; ++u) {
    const double shift = uniform(rng) * 0.3;
    SampleUnit unit{.values = {}, .stratum = u};
    for (int i = 0; i < length; ++i) {
      const double x = std::fmod(uniform(rng) * 0.7 + shift, 1.0);
      unit.values.push_back(x + bend * x * (1.0 - x));
    }
    out.push_back(std::move(unit));
  }
  return out;
}

std::vector<double> pooled(const std::vector<SampleUnit>& units) {
  std::vector<double> values;
  for (const SampleUnit& u : units) values.insert(values.end(), u.values.begin(), u.values.end());
  return values;
}

}  // namespace

// The same law on both sides, tokens of a unit dependent: the permutation test over units holds
// its level, the token-level test does not, which is why the two-sample verdict takes answers as
// units.
TEST(PermutationKsTest, HoldsItsLevelWhereTokensOfAnAnswerAreDependent) {
  std::mt19937_64 rng(11);
  int permutation_rejections = 0, token_rejections = 0;
  constexpr int kTrials = 400;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::vector<SampleUnit> first = dependent_units(rng, 20, 30, 0.0), second = dependent_units(rng, 20, 30, 0.0);
    permutation_rejections += permutation_ks_test(first, second, 199, rng(), 0.05).p_value <= 0.05;
    token_rejections += ks_two_sample_test(pooled(first), pooled(second), 0.05).rejected;
  }
  RecordProperty("permutation_rejections", permutation_rejections);
  RecordProperty("token_rejections", token_rejections);
  // Binomial(400, 0.05): 34 is 3.2 standard deviations above its mean of 20.
  EXPECT_LE(permutation_rejections, 34);
  EXPECT_GE(token_rejections, 100);
}

TEST(PermutationKsTest, RejectsAnotherLawAndStatesWhatItCanDetect) {
  std::mt19937_64 rng(12);
  int rejections = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const PermutationKsTest test =
        permutation_ks_test(dependent_units(rng, 40, 30, 0.0), dependent_units(rng, 40, 30, 0.6), 199, rng(), 0.05);
    rejections += test.p_value <= 0.05;
    EXPECT_EQ(test.first_units, 40);
    EXPECT_EQ(test.exchangeable_units, 80);
    EXPECT_DOUBLE_EQ(test.first_effective_units, 40.0);
    EXPECT_GT(test.detectable_distance, hoeffding_margin(20.0));
  }
  EXPECT_GE(rejections, 45);
}

TEST(PermutationKsTest, ExchangesUnitsOnlyWithinTheirStratumAndIsDeterministic) {
  // Stratum 0 holds a unit of each side; stratum 1 only a first-side unit, which never moves.
  const std::vector<SampleUnit> first = {{{0.1, 0.2}, 0}, {{0.9}, 1}};
  const std::vector<SampleUnit> second = {{{0.5, 0.6}, 0}};
  const PermutationKsTest test = permutation_ks_test(first, second, 999, 3, 0.05);
  EXPECT_EQ(test.exchangeable_units, 2);
  EXPECT_EQ(test.first_values, 3);
  EXPECT_EQ(test.second_values, 2);
  // Observed: {0.1, 0.2, 0.9} against {0.5, 0.6}, D = 2/3. Swapped: {0.5, 0.6, 0.9} against
  // {0.1, 0.2}, D = 1. Each labelling comes up about half the time: p about 1.
  EXPECT_NEAR(test.distance, 2.0 / 3.0, 1e-12);
  EXPECT_GT(test.p_value, 0.9);
  EXPECT_EQ(permutation_ks_test(first, second, 999, 3, 0.05).p_value, test.p_value);
  EXPECT_THROW(permutation_ks_test(first, {}, 99, 0, 0.05), std::invalid_argument);
  EXPECT_THROW(permutation_ks_test(first, second, 0, 0, 0.05), std::invalid_argument);
  EXPECT_THROW(permutation_ks_test(first, std::vector<SampleUnit>{{{1.5}, 0}}, 99, 0, 0.05), std::invalid_argument);
}

// scipy.stats.binomtest(first, first + second, first_trials / (first_trials + second_trials)),
// two-sided and with alternative='greater': five tokens outside the support against none in as
// many is 1 / 32 one-sided, 1 / 16 two-sided.
// Exact engines, one answer a question a side, the answers 64 tokens long against a baseline's
// 16: relabelling moves the sides' token counts, and D itself, compared across relabellings of
// other sizes, rejected about 18% of such runs at 0.05. D sqrt(n m / (n + m)) holds the level.
TEST(PermutationKsTest, HoldsItsLevelWhenTheSidesAnswersDifferInLength) {
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int runs = 300;
  int rejected = 0;
  for (int run = 0; run < runs; ++run) {
    std::vector<SampleUnit> first, second;
    for (int64_t question = 0; question < 20; ++question) {
      for (auto& [side, length] : {std::pair{&first, 64}, std::pair{&second, 16}}) {
        SampleUnit unit{.values = {}, .stratum = question};
        for (int i = 0; i < length; ++i) unit.values.push_back(uniform(random));
        side->push_back(std::move(unit));
      }
    }
    rejected += permutation_ks_test(first, second, 199, static_cast<uint64_t>(run), 0.05).p_value <= 0.05;
  }
  EXPECT_LE(rejected, 24) << "of " << runs;  // 8%; about 15 at the level
}

// Five questions with one answer a side have 2^5 = 32 relabellings: each is drawn once, and no
// p-value can fall below 1 / 32, above alpha / 7.
TEST(PermutationKsTest, FewRelabellingsAreEnumeratedAndBoundThePValue) {
  std::vector<SampleUnit> first, second;
  for (int64_t question = 0; question < 5; ++question) {
    first.push_back({.values = {0.9, 0.95}, .stratum = question});
    second.push_back({.values = {0.1, 0.05}, .stratum = question});
  }
  const PermutationKsTest test = permutation_ks_test(first, second, 1999, 3, 0.05);
  EXPECT_TRUE(test.exact);
  EXPECT_EQ(test.permutations, 32);
  EXPECT_DOUBLE_EQ(test.smallest_p_value, 1.0 / 32);
  // The observed split and its mirror are the two most extreme.
  EXPECT_DOUBLE_EQ(test.p_value, 2.0 / 32);
}

// The pooled group at p 0.012 and six subtasks that cannot go below 1 / 32: Holm over all seven
// multiplies 0.012 by 7 and rejects nothing; over the hypotheses that can reach their level (the
// smallest m with at most m reaching alpha / m is 2, and only the pooled group reaches 0.025) it
// rejects the pooled group.
TEST(HolmAfterScreening, LeavesOutHypothesesThatCannotReachTheirLevel) {
  const std::vector<double> p = {0.012, 0.5, 0.25, 1.0, 0.5, 0.75, 0.0625};
  const std::vector<double> smallest = {1.0 / 2000, 1.0 / 32, 1.0 / 32, 1.0 / 32, 1.0 / 32, 1.0 / 32, 1.0 / 32};
  EXPECT_FALSE(holm_bonferroni(p, 0.05).rejected[0]);
  const HolmDecision screened = holm_after_screening(p, smallest, 0.05);
  EXPECT_EQ(screened.family_size, 1u);
  EXPECT_TRUE(screened.rejected[0]);
  EXPECT_DOUBLE_EQ(screened.adjusted_p_values[0], 0.012);
  for (size_t i = 1; i < p.size(); ++i) {
    EXPECT_FALSE(screened.tested[i]);
    EXPECT_FALSE(screened.rejected[i]);
    EXPECT_EQ(screened.adjusted_p_values[i], 1.0);
  }
  // Where every hypothesis can reach alpha / m, it is Holm's procedure.
  const std::vector<double> reachable(p.size(), 1.0 / 2000);
  EXPECT_EQ(holm_after_screening(p, reachable, 0.05).adjusted_p_values, holm_bonferroni(p, 0.05).adjusted_p_values);
  EXPECT_THROW(holm_after_screening(p, std::vector<double>{0.5}, 0.05), std::invalid_argument);
}

// Boundary tokens cluster in answers: one answer in ten holds them, at 20% of its 64 tokens (a
// rate of 2%), alike on both sides. Taken as independent tokens (the exact binomial test this
// replaced) such sides reject 31% of the time at 0.05; relabelling whole answers holds the level.
TEST(CompareRates, HoldsItsLevelWhenEventsClusterInUnits) {
  std::mt19937_64 random(5);
  std::bernoulli_distribution clustered(0.1);
  std::binomial_distribution<int64_t> events(64, 0.2);
  const int runs = 300;
  int rejected = 0;
  for (int run = 0; run < runs; ++run) {
    std::vector<UnitEvents> first, second;
    for (int64_t question = 0; question < 40; ++question) {
      for (std::vector<UnitEvents>* side : {&first, &second})
        side->push_back({.events = clustered(random) ? events(random) : 0, .trials = 64, .stratum = question});
    }
    rejected += compare_rates(first, second, 999, static_cast<uint64_t>(run)).p_value <= 0.05;
  }
  EXPECT_LE(rejected, 24) << "of " << runs;  // 8%; about 15 at the level
}

TEST(CompareRates, IsOneSidedExactWhereFewRelabellingsAndRefusesBadCounts) {
  // Three questions, one answer a side, the first side's answers each with more events: of the
  // 8 relabellings only the observed has an excess as large.
  const std::vector<UnitEvents> first = {{3, 10, 0}, {2, 10, 1}, {4, 10, 2}}, second = {{0, 10, 0}, {1, 10, 1}, {0, 10, 2}};
  const RateComparison more = compare_rates(first, second, 1999, 1);
  EXPECT_TRUE(more.exact);
  EXPECT_EQ(more.permutations, 8);
  EXPECT_DOUBLE_EQ(more.p_value, 1.0 / 8);
  EXPECT_DOUBLE_EQ(more.smallest_p_value, 1.0 / 8);
  EXPECT_EQ(more.first_events, 9);
  EXPECT_DOUBLE_EQ(compare_rates(second, first, 1999, 1).p_value, 1.0);
  EXPECT_EQ(compare_rates(std::vector<UnitEvents>{{0, 5, 0}}, std::vector<UnitEvents>{{0, 5, 0}}, 9, 1).p_value, 1.0);
  EXPECT_THROW(compare_rates(std::vector<UnitEvents>{{3, 2, 0}}, second, 9, 1), std::invalid_argument);
  EXPECT_THROW(compare_rates(std::vector<UnitEvents>{{0, 0, 0}}, second, 9, 1), std::invalid_argument);
}

// A correct sample leaves the simultaneous band in some bin at most alpha of the time; a band of
// two standard deviations per bin, as the report drew before, is left by most correct samples.
// Against enumeration of every outcome of a few trials, and scipy's binomial survival function
// where the probabilities are equal: binom.sf(4, 20, 0.1) = 0.0431745.
TEST(PoissonBinomial, UpperTailMatchesEnumeration) {
  const std::vector<double> p = {0.1, 0.5, 0.9, 0.3, 0.0, 1.0};
  for (int64_t k = 0; k <= 7; ++k) {
    double tail = 0.0;
    for (int outcome = 0; outcome < (1 << 6); ++outcome) {
      double chance = 1.0;
      int successes = 0;
      for (int i = 0; i < 6; ++i) {
        const bool success = (outcome >> i) & 1;
        chance *= success ? p[i] : 1.0 - p[i];
        successes += success;
      }
      if (successes >= k) tail += chance;
    }
    EXPECT_NEAR(poisson_binomial_upper_tail(p, k), tail, 1e-14) << k;
  }
  EXPECT_NEAR(poisson_binomial_upper_tail(std::vector<double>(20, 0.1), 5), 0.0431745, 1e-7);
  EXPECT_THROW(poisson_binomial_upper_tail(std::vector<double>{1.5}, 1), std::invalid_argument);
  EXPECT_THROW(poisson_binomial_upper_tail(std::vector<double>{0.5}, -1), std::invalid_argument);
}

// Beyond the exact computation's budget, Chernoff's bound: never below the exact tail.
TEST(PoissonBinomial, ManyTrialsGiveChernoffsBoundAboveTheTail) {
  const std::vector<double> p(200000, 0.001);
  const double bound = poisson_binomial_upper_tail(p, 300);
  const double mean = 200.0, k = 300.0;
  EXPECT_NEAR(bound, std::exp(-mean + k * (1.0 + std::log(mean / k))), 1e-9 * bound);
  EXPECT_GT(bound, 2.7e-11);  // the exact tail: binom.sf(299, 200000, 0.001) = 2.64e-11
  EXPECT_NEAR(poisson_binomial_upper_tail(p, 100), 1.0, 1e-12);
}

TEST(UniformHistogramBand, HoldsAllTwentyBinsOfAUniformSample) {
  std::mt19937_64 rng(13);
  constexpr int kSamples = 2000, kValues = 2000;
  const HistogramBand band = uniform_histogram_band(kValues, 0.05);
  const double expected = kValues / 20.0, two_sigma = 2.0 * std::sqrt(expected * 0.95);
  int outside = 0, outside_two_sigma = 0;
  for (int s = 0; s < kSamples; ++s) {
    const UniformityHistogram counts = uniformity_histogram(uniforms(rng, kValues));
    outside += std::ranges::any_of(counts, [&](int64_t c) { return c < band.low || c > band.high; });
    outside_two_sigma += std::ranges::any_of(counts, [&](int64_t c) { return std::abs(c - expected) > two_sigma; });
  }
  RecordProperty("outside", outside);
  EXPECT_LE(outside, 129);  // 5% of 2,000 is 100; 3 standard deviations above it is 129
  EXPECT_GE(outside_two_sigma, 1000);
  EXPECT_LT(band.low, expected);
  EXPECT_GT(band.high, expected);
}

TEST(DetectableDistance, StatedAtHolmsStrictestLevelIsLarger) {
  EXPECT_GT(ks_detectable_distance(1000.0, 0.05 / 7), ks_detectable_distance(1000.0, 0.05));
  EXPECT_NEAR(hoeffding_margin(500.0), std::sqrt(std::log(10.0) / 1000.0), 1e-15);
}

}  // namespace specgate
