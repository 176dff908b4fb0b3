#pragma once
// Per-region means of the accuracy metrics over the evaluated items of a batch (the summary's "eval").
#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "s3d/stereo/metrics.hpp"

namespace s3d::sgm_depth {

class EvalTotals {
 public:
  /// Adds one item's result (thread-safe).
  void add(const stereo::EvalResult& result);
  std::size_t items() const;
  /// {"items": N, "regions": {region: {"mean_bad1_all": ..., ..., "items": n}}}
  nlohmann::json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::size_t items_ = 0;
  std::map<std::string, std::map<std::string, double>> sums_;  // region -> metric -> sum of per-item values
  std::map<std::string, std::size_t> counts_;                  // region -> items with a finite value
};

}  // namespace s3d::sgm_depth
