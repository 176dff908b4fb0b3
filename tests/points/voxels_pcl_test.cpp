// VoxelEngine (CPU device, kWorld origin, kMean) beside PCL's VoxelGrid on the real bunny and KITTI scans: the
// same voxels in the same order (PCL sorts by the same x-fastest linear index), with or without
// setMinimumPointsNumberPerVoxel, and centroids within float rounding (PCL sums in fp32, in an unstable
// std::sort order; s3d sums in fp64 in input order).
#include <gtest/gtest.h>
#include <pcl/filters/voxel_grid.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "s3d/io/point_cloud_io.hpp"
#include "s3d/points/voxels.hpp"
#include "test_support.hpp"

namespace {

using s3d::points::VoxelEngine;
using s3d::points::VoxelizeParams;
using s3d::points::Voxels;

void compare_with_pcl(const std::string& path, const char* tag, float leaf, int min_points) {
  const s3d::PointCloud cloud = s3d::io::read_point_cloud(path);
  const auto view = cloud.view();
  auto in = pcl::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
  for (std::size_t i = 0; i < view.size; ++i)
    in->push_back(pcl::PointXYZ(view.xyz[3 * i], view.xyz[3 * i + 1], view.xyz[3 * i + 2]));
  pcl::VoxelGrid<pcl::PointXYZ> grid;
  grid.setInputCloud(in);
  grid.setLeafSize(leaf, leaf, leaf);
  grid.setMinimumPointsNumberPerVoxel(static_cast<unsigned>(min_points));
  pcl::PointCloud<pcl::PointXYZ> pcl_out;
  grid.filter(pcl_out);

  VoxelizeParams p;
  p.voxel_size = {leaf, leaf, leaf};
  p.min_points_per_voxel = min_points;
  VoxelEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
  const Voxels v = engine.voxelize(view, nullptr, p);
  std::printf("%s leaf %g min %d: s3d %lld voxels, PCL %zu\n", tag, leaf, min_points, static_cast<long long>(v.count),
              pcl_out.size());
  ASSERT_EQ(static_cast<std::size_t>(v.count), pcl_out.size()) << tag;
  // PCL's grid corner: floor(min_p * inverse_leaf) * leaf.
  const Eigen::Vector3i min_b = grid.getMinBoxCoordinates();
  const Eigen::Vector3i div_b = grid.getNrDivisions();
  EXPECT_EQ(v.shape[0], div_b[2]) << tag;
  EXPECT_EQ(v.shape[1], div_b[1]) << tag;
  EXPECT_EQ(v.shape[2], div_b[0]) << tag;
  double worst = 0;
  for (std::int64_t j = 0; j < v.count; ++j) {
    const pcl::PointXYZ& q = pcl_out[j];
    const float ours[3] = {v.xyz[3 * j], v.xyz[3 * j + 1], v.xyz[3 * j + 2]};
    const float theirs[3] = {q.x, q.y, q.z};
    for (int a = 0; a < 3; ++a) {
      // The same voxel: PCL's centroid lies in the cell whose coordinate s3d reports.
      const int cell = static_cast<int>(std::floor(theirs[a] * (1.0f / leaf))) - min_b[a];
      if (cell != v.coords[4 * j + 3 - a]) {
        // A centroid on a face may round into the neighbour; accept only when it is within rounding of it.
        EXPECT_NEAR(theirs[a], ours[a], 1e-6 * (std::abs(ours[a]) + leaf)) << tag << " voxel " << j;
      }
      const double err = std::abs(static_cast<double>(ours[a]) - theirs[a]);
      worst = std::max(worst, err / (std::abs(ours[a]) + leaf));
      EXPECT_LE(err, 2e-6 * (std::abs(ours[a]) + leaf)) << tag << " voxel " << j << " axis " << a;
    }
  }
  std::printf("%s: largest centroid difference %.3g (relative to |p| + leaf)\n", tag, worst);
}

TEST(VoxelPclCompare, Bunny) {
  S3D_REQUIRE_DATA(path, "pointclouds/stanford_bunny/bun_zipper.ply");
  compare_with_pcl(path, "bunny", 0.002f, 1);
  compare_with_pcl(path, "bunny", 0.005f, 1);
  compare_with_pcl(path, "bunny", 0.005f, 4);
}

TEST(VoxelPclCompare, Kitti) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  compare_with_pcl(path, "KITTI", 0.1f, 1);
  compare_with_pcl(path, "KITTI", 0.2f, 3);
}

}  // namespace
