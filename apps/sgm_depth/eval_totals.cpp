#include "eval_totals.hpp"

#include <cstddef>
#include <map>
#include <string>

namespace s3d::sgm_depth {
namespace {

struct MetricSums {
  double value_sum = 0.0;     // of the per-item values
  double weighted_sum = 0.0;  // of value * weight
  double weight_sum = 0.0;
  std::size_t items = 0;
};

}  // namespace

void add_eval_summary(const std::vector<nlohmann::json>& ok_items, nlohmann::json& summary) {
  static const char* const kAll[] = {"bad1_all", "bad2_all", "d1_all", "density"};
  static const char* const kEstimated[] = {"bad1_est", "bad2_est", "d1_est", "avg_err_est"};
  std::size_t evaluated = 0;
  std::map<std::string, std::map<std::string, MetricSums>> sums;  // region -> metric
  std::map<std::string, std::size_t> region_items;
  for (const auto& item : ok_items) {
    const auto eval = item.find("eval");
    if (eval == item.end() || !eval->is_object()) continue;
    ++evaluated;
    const auto regions = eval->find("regions");
    if (regions == eval->end() || !regions->is_object()) continue;
    for (auto r = regions->begin(); r != regions->end(); ++r) {
      const double gt_pixels = r->value("gt_pixels", 0.0);
      const double estimated = r->value("estimated", 0.0);
      if (gt_pixels <= 0.0) continue;
      ++region_items[r.key()];
      auto add = [&](const char* metric, double weight) {
        const auto v = r->find(metric);
        if (v == r->end() || !v->is_number()) return;
        MetricSums& m = sums[r.key()][metric];
        m.value_sum += v->get<double>();
        m.weighted_sum += v->get<double>() * weight;
        m.weight_sum += weight;
        ++m.items;
      };
      for (const char* metric : kAll) add(metric, gt_pixels);
      if (estimated > 0.0)
        for (const char* metric : kEstimated) add(metric, estimated);
    }
  }
  if (evaluated == 0) return;
  nlohmann::json regions = nlohmann::json::object();
  for (const auto& [region, metrics] : sums) {
    nlohmann::json r{{"items", region_items[region]}};
    for (const auto& [metric, m] : metrics) {
      r["mean_" + metric] = m.value_sum / static_cast<double>(m.items);
      r["pooled_" + metric] = m.weighted_sum / m.weight_sum;
    }
    regions[region] = r;
  }
  summary["eval"] = {{"items", evaluated}, {"regions", regions}};
}

}  // namespace s3d::sgm_depth
