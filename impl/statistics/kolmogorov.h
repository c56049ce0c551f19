#pragma once

namespace specgate {

// The Kolmogorov distribution, the limit law of sqrt(n) sup |F_n - F| for n i.i.d. draws from a
// continuous F: P(K > lambda) = 2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 lambda^2). 1 for lambda <= 0.
double kolmogorov_survival(double lambda);

// The lambda with kolmogorov_survival(lambda) == alpha, for alpha in (0, 1).
double kolmogorov_upper_quantile(double alpha);

}  // namespace specgate
