#include "impl/statistics/rate_comparison.h"

#include <algorithm>
#include <stdexcept>

#include <boost/math/distributions/binomial.hpp>

namespace specgate {

RateComparison compare_rates(int64_t first_events, int64_t first_trials, int64_t second_events, int64_t second_trials,
                             RateAlternative alternative) {
  if (first_events < 0 || second_events < 0 || first_events > first_trials || second_events > second_trials ||
      first_trials < 1 || second_trials < 1)
    throw std::invalid_argument("a rate comparison needs 0 <= events <= trials and trials on both sides");
  RateComparison result{first_events, first_trials, second_events, second_trials, 1.0};
  const int64_t events = first_events + second_events;
  if (events == 0) return result;
  const double share = static_cast<double>(first_trials) / static_cast<double>(first_trials + second_trials);
  const boost::math::binomial law(static_cast<double>(events), share);
  if (alternative == RateAlternative::kGreater) {
    result.p_value = first_events == 0 ? 1.0
                                       : boost::math::cdf(boost::math::complement(law, static_cast<double>(first_events - 1)));
    return result;
  }
  const double observed = boost::math::pdf(law, static_cast<double>(first_events));
  // Relative slack as scipy's binomtest takes it, so that outcomes as likely up to rounding count.
  const double bound = observed * (1.0 + 1e-7);
  double p = 0.0;
  for (int64_t k = 0; k <= events; ++k) {
    const double mass = boost::math::pdf(law, static_cast<double>(k));
    if (mass <= bound) p += mass;
  }
  result.p_value = std::min(1.0, p);
  return result;
}

}  // namespace specgate
