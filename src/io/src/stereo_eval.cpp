#include "s3d/io/stereo_eval.hpp"

#include <cmath>
#include <filesystem>
#include <limits>

#include "s3d/core/errors.hpp"
#include "s3d/io/stereo_datasets.hpp"

namespace s3d::io {

std::vector<EvalMask> find_masks(const std::string& gt_path, int width, int height) {
  std::vector<EvalMask> masks;
  for (const auto& [region, path] : middlebury_mask_files(gt_path)) {
    int w = 0, h = 0;
    EvalMask m{region, read_mask(path, &w, &h, 255)};
    if (w != width || h != height)
      throw DataError(path + ": mask is " + std::to_string(w) + "x" + std::to_string(h) + " but the image is " +
                      std::to_string(width) + "x" + std::to_string(height));
    masks.push_back(std::move(m));
  }
  return masks;
}

const RegionErrors* EvalResult::find(const std::string& name) const {
  for (const auto& r : regions)
    if (r.region == name) return &r;
  return nullptr;
}

EvalResult evaluate_disparity(const ImageF& estimate, const ImageF& gt, const std::vector<EvalMask>& masks,
                              const EvalOptions& options) {
  if (estimate.width != gt.width || estimate.height != gt.height)
    throw DataError("ground truth is " + std::to_string(gt.width) + "x" + std::to_string(gt.height) +
                    " but the disparity map is " + std::to_string(estimate.width) + "x" + std::to_string(estimate.height));
  const int w = gt.width, h = gt.height;
  const int x0 = std::max(0, options.x_min);
  const int x1 = options.x_max > 0 ? std::min(w, options.x_max) : w;
  EvalResult result;
  std::size_t valid = 0, total = 0;
  for (int y = 0; y < h; ++y)
    for (int x = x0; x < x1; ++x) {
      ++total;
      if (std::isfinite(estimate.at(x, y))) ++valid;
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
        const float g = gt.data[i];
        if (!std::isfinite(g) || g <= 0.0f) continue;
        if (mask && !(*mask)[i]) continue;
        ++e.gt_pixels;
        const float d = estimate.data[i];
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

namespace {
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json to_json(const EvalResult& result) {
  nlohmann::json j;
  j["density"] = num(result.density);
  nlohmann::json regions = nlohmann::json::object();
  for (const auto& r : result.regions) {
    regions[r.region] = {{"gt_pixels", r.gt_pixels},     {"estimated", r.estimated},
                         {"density", num(r.density)},    {"bad1_all", num(r.bad1_all)},
                         {"bad2_all", num(r.bad2_all)},  {"d1_all", num(r.d1_all)},
                         {"bad1_est", num(r.bad1_est)},  {"bad2_est", num(r.bad2_est)},
                         {"d1_est", num(r.d1_est)},      {"avg_err_est", num(r.avg_err_est)}};
  }
  j["regions"] = regions;
  return j;
}

}  // namespace s3d::io
