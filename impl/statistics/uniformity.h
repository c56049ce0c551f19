#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace specgate {

// A Kolmogorov-Smirnov test, one-sample against Uniform(0, 1) or two-sample, with what the
// sample can and cannot tell about the true sup-distance d between the distributions.
struct DistributionTest {
  int64_t n = 0;               // values in the (first) sample
  int64_t m = 0;               // values in the second sample; 0 for the one-sample test
  double effective_n = 0.0;    // n, or n m / (n + m)
  double distance = 0.0;       // D: sup |F_n - U| or sup |F_n - G_m|
  // One sample: ks_p_value(distance, n). Two: ks_two_sample_p_value(distance, n, m).
  double p_value = 1.0;
  // A 1 - alpha confidence interval for d: D -+ sqrt(ln(2 / alpha) / (2 effective_n)), clipped
  // to [0, 1]. |D - d| <= sup |F_n - F| (two samples: sup |(F_n - F) - (G_m - G)|), which the
  // Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant, P(sup > e) <= 2 exp(-2 n e^2),
  // keeps within that margin with probability >= 1 - alpha. The two-sample form at n_eff is
  // proven under F = G for equal sizes from 458 on (Wei and Dudley 2012) and asymptotic otherwise.
  double distance_low = 0.0;
  double distance_high = 1.0;
  double detectable_distance = 1.0;  // ks_detectable_distance(effective_n, alpha)
  double alpha = 0.05;
  bool rejected = false;  // p_value <= alpha
};

// The one-sample test of values in [0, 1] against Uniform(0, 1). Throws std::invalid_argument
// for an empty sample, a value outside [0, 1] or NaN, or alpha outside (0, 1).
DistributionTest ks_uniformity_test(std::span<const double> values, double alpha);

// The two-sample test of whether first and second, values in [0, 1], share a distribution.
// Throws std::invalid_argument as ks_uniformity_test does, for either sample.
DistributionTest ks_two_sample_test(std::span<const double> first, std::span<const double> second,
                                    double alpha);

// The one-sample p-value of D: the asymptotic law with Stephens' small-sample correction
// (Stephens 1970, "Use of the Kolmogorov-Smirnov, Cramer-von Mises and related statistics without
// extensive tables"): P(K > (sqrt(n) + 0.12 + 0.11 / sqrt(n)) D), K Kolmogorov-distributed.
double ks_p_value(double distance, double effective_n);

// The two-sample p-value of D for samples of n and m values without ties: exact, P(D_nm >= D)
// under a common continuous law, for n m up to kExactTwoSampleCells (the lattice paths from
// (0, 0) to (n, m) that reach |i / n - j / m| >= D, Hodges 1958, as scipy's ks_2samp
// method='exact' counts them); the plain asymptotic law P(K > sqrt(n m / (n + m)) D) beyond.
// Stephens' correction is for one sample: with equal n, D takes the values k / n, and the
// corrected law's size at nominal 0.05 is 0.059 at n = 64.
inline constexpr int64_t kExactTwoSampleCells = 25'000'000;
double ks_two_sample_p_value(double distance, int64_t n, int64_t m);

// The smallest true sup-distance d that the one-sample test at alpha is guaranteed to reject
// with probability >= 0.9 (a bound, not the smallest such d). The test rejects when
// D >= c = K_alpha / (sqrt(n) + 0.12 + 0.11 / sqrt(n)), K_alpha the Kolmogorov upper
// alpha-quantile; the two-sample test at the same effective n has about the same c. Where |F - G| reaches d, say F(x) - G(x) = d,
//   D >= F_n(x) - G_m(x) = d + (F_n - F)(x) - (G_m - G)(x)
// (one sample: G_m = G = U). The deviation is a sum of n independent terms of range 1/n and m of
// range 1/m, so by Hoeffding's inequality it falls below -t with probability at most
// exp(-2 t^2 / (1/n + 1/m)) = exp(-2 n_eff t^2). With t = sqrt(ln(10) / (2 n_eff)) that is 0.1,
// so D >= c with probability >= 0.9 once d >= c + t. Not clipped: 1 or more means the bound
// guarantees nothing at this size. A verdict over a family of m groups with Holm's procedure
// rejects a group for certain only at alpha / m: state it at that level.
double ks_detectable_distance(double effective_n, double alpha);

// Hoeffding's margin t of the bound above, for effective_n independent units: the deviation of
// D from d stays above -t with probability >= 0.9.
double hoeffding_margin(double effective_n);

// A simultaneous band for a histogram of n uniform values in kUniformityBins bins: every bin's
// count lies in [low, high] with probability >= 1 - alpha (Bonferroni over the bins, each
// bound a Binomial(n, 1 / bins) quantile at alpha / (2 bins)). A correct sample leaves it in
// no bin 95 times in 100 at alpha 0.05.
struct HistogramBand {
  double low = 0.0, high = 0.0;
};
HistogramBand uniform_histogram_band(int64_t n, double alpha);

// The report's picture: counts of values in [k / 20, (k + 1) / 20), 1 counted in the last bin.
// Throws std::invalid_argument for a value outside [0, 1] or NaN.
inline constexpr int kUniformityBins = 20;
using UniformityHistogram = std::array<int64_t, kUniformityBins>;
UniformityHistogram uniformity_histogram(std::span<const double> values);

struct ChiSquareTest {
  double statistic = 0.0;
  int degrees_of_freedom = 0;
  double p_value = 1.0;
};

// Pearson's chi-square of the counts against equal expected counts, a second statistic beside
// D. The chi-square law it takes the p-value from wants an expected count of 5 or more per bin,
// 100 values or more. Throws std::invalid_argument for an empty histogram.
ChiSquareTest chi_square_uniformity(const UniformityHistogram& counts);

}  // namespace specgate
