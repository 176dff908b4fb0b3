#include "s3d/stereo/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "s3d/core/errors.hpp"

namespace s3d::stereo {

const RegionErrors* EvalResult::find(const std::string& name) const {
  for (const auto& r : regions)
    if (r.region == name) return &r;
  return nullptr;
}

double valid_percent(ImageView<const float> disparity) {
  std::size_t valid = 0;
  for (int y = 0; y < disparity.height; ++y)
    for (int x = 0; x < disparity.width; ++x) valid += std::isfinite(disparity(x, y));
  return 100.0 * static_cast<double>(valid) / static_cast<double>(disparity.pixels());
}

EvalResult evaluate_disparity(ImageView<const float> estimate, ImageView<const float> gt,
                              const std::vector<EvalMask>& masks, const EvalOptions& options) {
  if (estimate.width != gt.width || estimate.height != gt.height)
    throw DataError("ground truth is " + std::to_string(gt.width) + "x" + std::to_string(gt.height) +
                    " but the disparity map is " + std::to_string(estimate.width) + "x" +
                    std::to_string(estimate.height));
  const int w = gt.width, h = gt.height;
  const int x0 = std::max(0, options.x_min);
  const int x1 = options.x_max > 0 ? std::min(w, options.x_max) : w;
  EvalResult result;
  std::size_t valid = 0, total = 0;
  for (int y = 0; y < h; ++y)
    for (int x = x0; x < x1; ++x) {
      ++total;
      if (std::isfinite(estimate(x, y))) ++valid;
    }
  result.density = total ? 100.0 * valid / total : std::numeric_limits<double>::quiet_NaN();
  const std::size_t region_count = masks.empty() ? 1 : masks.size();
  for (std::size_t r = 0; r < region_count; ++r) {
    const std::vector<std::uint8_t>* mask = masks.empty() ? nullptr : &masks[r].mask;
    RegionErrors e;
    e.region = masks.empty() ? "all" : masks[r].name;
    std::size_t bad1 = 0, bad2 = 0, d1 = 0;
    double abs_sum = 0.0;
    for (int y = 0; y < h; ++y)
      for (int x = x0; x < x1; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * w + x;
        const float g = gt(x, y);
        if (!std::isfinite(g) || g <= 0.0f) continue;
        if (mask && !(*mask)[i]) continue;
        ++e.gt_pixels;
        const float d = estimate(x, y);
        if (!std::isfinite(d)) continue;
        ++e.estimated;
        const double err = std::fabs(static_cast<double>(d) - g);
        abs_sum += err;
        bad1 += err > 1.0;
        bad2 += err > 2.0;
        d1 += err > 3.0 && err > 0.05 * g;
      }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double n_all = static_cast<double>(e.gt_pixels), n_est = static_cast<double>(e.estimated);
    const std::size_t missing = e.gt_pixels - e.estimated;
    e.density = n_all > 0 ? 100.0 * n_est / n_all : nan;
    e.bad1_all = n_all > 0 ? 100.0 * (bad1 + missing) / n_all : nan;
    e.bad2_all = n_all > 0 ? 100.0 * (bad2 + missing) / n_all : nan;
    e.d1_all = n_all > 0 ? 100.0 * (d1 + missing) / n_all : nan;
    e.bad1_est = n_est > 0 ? 100.0 * bad1 / n_est : nan;
    e.bad2_est = n_est > 0 ? 100.0 * bad2 / n_est : nan;
    e.d1_est = n_est > 0 ? 100.0 * d1 / n_est : nan;
    e.avg_err_est = n_est > 0 ? abs_sum / n_est : nan;
    result.regions.push_back(e);
  }
  return result;
}

}  // namespace s3d::stereo
