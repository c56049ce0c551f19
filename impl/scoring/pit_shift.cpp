#include "impl/scoring/pit_shift.h"

#include <ATen/ATen.h>

namespace specgate {

at::Tensor pit_law_shift(const at::Tensor& reference, const at::Tensor& engine) {
  const at::Tensor p = reference.to(at::kDouble);
  // A stable sort keeps equal masses in id order.
  const at::Tensor order = std::get<1>(p.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true));
  const at::Tensor p_sorted = p.gather(1, order);
  const at::Tensor e_in_support = engine.to(p.device(), at::kDouble).gather(1, order) * p_sorted.gt(0.0);
  const at::Tensor e_mass = e_in_support.sum(1, /*keepdim=*/true);
  const at::Tensor e_sorted = e_in_support / e_mass.clamp_min(1e-300);
  const at::Tensor p_through = p_sorted.cumsum(1);
  const at::Tensor e_before = e_sorted.cumsum(1) - e_sorted;
  const at::Tensor u = (at::arange(kPitShiftPoints, p.options()) + 0.5) / static_cast<double>(kPitShiftPoints);
  const at::Tensor points = u.unsqueeze(0).expand({p.size(0), kPitShiftPoints}).contiguous();
  // The token whose PIT interval [p_through - p, p_through) holds u.
  const at::Tensor at_u = at::searchsorted(p_through, points, /*out_int32=*/false, /*right=*/true).clamp_max(p.size(1) - 1);
  const at::Tensor own = p_sorted.gather(1, at_u);
  const at::Tensor within = ((points - (p_through.gather(1, at_u) - own)) / own.clamp_min(1e-300)).clamp(0.0, 1.0);
  const at::Tensor law = e_before.gather(1, at_u) + e_sorted.gather(1, at_u) * within;
  return at::where(e_mass.gt(0.0), law - points, at::zeros_like(points));
}

}  // namespace specgate
