#include "s3d/io/stereo_eval.hpp"

#include <cmath>
#include <filesystem>
#include <limits>

#include "s3d/core/errors.hpp"
#include "s3d/io/stereo_datasets.hpp"

namespace s3d::io {

std::vector<stereo::EvalMask> find_masks(const std::string& gt_path, int width, int height) {
  std::vector<stereo::EvalMask> masks;
  for (const auto& [region, path] : middlebury_mask_files(gt_path)) {
    int w = 0, h = 0;
    stereo::EvalMask m{region, read_mask(path, &w, &h, 255)};
    if (w != width || h != height)
      throw DataError(path + ": mask is " + std::to_string(w) + "x" + std::to_string(h) + " but the image is " +
                      std::to_string(width) + "x" + std::to_string(height));
    masks.push_back(std::move(m));
  }
  return masks;
}

namespace {
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json to_json(const stereo::EvalResult& result) {
  nlohmann::json j;
  j["density"] = num(result.density);
  nlohmann::json regions = nlohmann::json::object();
  for (const auto& r : result.regions) {
    regions[r.region] = {{"gt_pixels", r.gt_pixels},         {"estimated", r.estimated},    {"density", num(r.density)},
                         {"bad1_all", num(r.bad1_all)},      {"bad2_all", num(r.bad2_all)}, {"d1_all", num(r.d1_all)},
                         {"bad1_est", num(r.bad1_est)},      {"bad2_est", num(r.bad2_est)}, {"d1_est", num(r.d1_est)},
                         {"avg_err_est", num(r.avg_err_est)}};
  }
  j["regions"] = regions;
  return j;
}

}  // namespace s3d::io
