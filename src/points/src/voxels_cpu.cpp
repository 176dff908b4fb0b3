// VoxelEngine, CPU backend: the same steps as the CUDA backend, sequentially — per-point keys, a sort of
// (key, index), runs of equal keys, the keep rules, then each kept voxel aggregated by voxel_math.hpp.
#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

#include "s3d/core/errors.hpp"
#include "voxels_impl.hpp"

namespace s3d::points {
namespace {

class CpuVoxels final : public VoxelEngine::Impl {
 public:
  using Impl::Impl;

  DeviceVoxels run_device(const VoxelRequest&) override {
    throw InvalidArgument("VoxelEngine::voxelize_device needs a CUDA engine");
  }
  CloudSummary summarize_device(PointsView<const float>, const std::int32_t*) override {
    throw InvalidArgument("VoxelEngine::voxelize_device needs a CUDA engine");
  }

  void run_host(const VoxelRequest& r, Voxels& out) override {
    const std::int64_t n = static_cast<std::int64_t>(r.points.size);
    const float* xyz = r.points.xyz;
    const detail::VoxelGrid& g = r.grid;
    sorted_.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      sorted_[i] = {detail::voxel_key(g, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], r.batch ? r.batch[i] : 0),
                    static_cast<std::int32_t>(i)};
    std::sort(sorted_.begin(), sorted_.end());  // (key, index): runs of a key list their points by index

    // Runs: [begin, end) of each occupied voxel, dropped points (the sentinel key) excluded.
    runs_.clear();
    std::int64_t in_grid = 0;
    for (std::int64_t i = 0; i < n && sorted_[i].first != g.sentinel; ++i, ++in_grid)
      if (i == 0 || sorted_[i].first != sorted_[i - 1].first) runs_.push_back(i);
    runs_.push_back(in_grid);
    const std::size_t run_count = runs_.size() - 1;
    out.dropped_out_of_range = n - in_grid;
    out.dropped_over_max_points = 0;
    out.dropped_over_max_voxels = 0;

    // A run survives min_points_per_voxel on its full length; max_voxels then keeps the survivors whose first
    // point has the smallest input indices (first indices are distinct, so the threshold is exact).
    first_.assign(run_count, INT_MAX);
    std::int64_t survivors = 0;
    for (std::size_t v = 0; v < run_count; ++v)
      if (runs_[v + 1] - runs_[v] >= r.min_points_per_voxel) first_[v] = sorted_[runs_[v]].second, ++survivors;
    std::int32_t threshold = INT_MAX - 1;
    if (r.max_voxels > 0 && survivors > r.max_voxels) {
      scratch_ = first_;
      std::nth_element(scratch_.begin(), scratch_.begin() + (r.max_voxels - 1), scratch_.end());
      threshold = scratch_[r.max_voxels - 1];
    }

    out.coords.clear();
    out.points_per_voxel.clear();
    out.representative.clear();
    out.xyz.clear();
    out.point_voxel.assign(static_cast<std::size_t>(n), -1);
    members_.resize(static_cast<std::size_t>(n));
    std::int32_t m = 0;
    for (std::size_t v = 0; v < run_count; ++v) {
      const std::int64_t begin = runs_[v], length = runs_[v + 1] - begin;
      const std::int64_t count =
          r.max_points_per_voxel > 0 && length > r.max_points_per_voxel ? r.max_points_per_voxel : length;
      out.dropped_over_max_points += length - count;
      if (first_[v] > threshold) {
        out.dropped_over_max_voxels += count;
        continue;
      }
      for (std::int64_t j = 0; j < count; ++j) {
        members_[j] = sorted_[begin + j].second;
        out.point_voxel[members_[j]] = m;
      }
      std::int32_t c[4], rep;
      float p[3];
      detail::voxel_coords(g, sorted_[begin].first, c);
      detail::aggregate_voxel(g, sorted_[begin].first, members_.data(), static_cast<int>(count), xyz, r.aggregate, p,
                              &rep);
      out.coords.insert(out.coords.end(), c, c + 4);
      out.points_per_voxel.push_back(static_cast<std::int32_t>(count));
      out.representative.push_back(rep);
      out.xyz.insert(out.xyz.end(), p, p + 3);
      ++m;
    }
    out.count = m;
  }

 private:
  std::vector<std::pair<unsigned long long, std::int32_t>> sorted_;
  std::vector<std::int64_t> runs_;
  std::vector<std::int32_t> first_, scratch_, members_;
};

}  // namespace

namespace detail {
std::unique_ptr<VoxelEngine::Impl> make_cpu_voxels(const Device& device) { return std::make_unique<CpuVoxels>(device); }
}  // namespace detail

}  // namespace s3d::points
