#include "eval_totals.hpp"

namespace s3d::sgm_depth {

void EvalTotals::add(const stereo::EvalResult& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++items_;
  for (const auto& e : r.regions) {
    if (e.gt_pixels == 0) continue;
    auto& s = sums_[e.region];
    s["bad1_all"] += e.bad1_all;
    s["bad2_all"] += e.bad2_all;
    s["d1_all"] += e.d1_all;
    s["density"] += e.density;
    if (e.estimated > 0) {
      s["bad1_est"] += e.bad1_est;
      s["bad2_est"] += e.bad2_est;
      s["d1_est"] += e.d1_est;
      s["avg_err_est"] += e.avg_err_est;
    }
    ++counts_[e.region];
  }
}

std::size_t EvalTotals::items() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return items_;
}

nlohmann::json EvalTotals::to_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json j{{"items", items_}};
  nlohmann::json regions = nlohmann::json::object();
  for (const auto& [region, s] : sums_) {
    nlohmann::json r = nlohmann::json::object();
    const std::size_t n = counts_.at(region);
    for (const auto& [k, v] : s) r["mean_" + k] = v / static_cast<double>(n);
    r["items"] = n;
    regions[region] = r;
  }
  j["regions"] = regions;
  return j;
}

}  // namespace s3d::sgm_depth
