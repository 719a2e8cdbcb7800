#pragma once
// Small statistics shared by the loader, the storage table and the model.
#include <vector>

namespace gpufeed {

// The q-quantile (q in [0,1]) of sorted values, interpolated linearly
// between neighbours; 0 when empty.
double quantile_sorted(const std::vector<double>& sorted, double q);

// z such that P(Z < z) = q for a standard normal Z (bisection on erfc:
// precise enough for reports and model inputs).
double inverse_normal_cdf(double q);

}  // namespace gpufeed
