// Every file in ../shared/data/pointclouds read, written in each encoding, and read back unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "cloud_test_util.hpp"
#include "s3d/io/point_cloud_io.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace s3d;
using namespace s3d::io;
using s3d::test::CloudTempDir;
using s3d::test::expect_same_cloud;

namespace {

std::vector<fs::path> files_with(const fs::path& root, const std::string& ext) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> names_of(const PointCloud& c) {
  std::vector<std::string> n;
  for (const auto& a : c.attributes) n.push_back(a.name);
  return n;
}

}  // namespace

TEST(RealClouds, EveryPlyRoundTripsInEveryEncoding) {
  S3D_REQUIRE_DATA(root, "pointclouds");
  const auto files = files_with(root, ".ply");
  ASSERT_EQ(files.size(), 8u);  // the 6 bunny files, the KITTI twin, the aerial survey
  CloudTempDir dir;
  for (const auto& f : files) {
    const PointCloud cloud = read_ply(f.string());
    EXPECT_GT(cloud.size(), 0u) << f;
    for (PlyFormat format : {PlyFormat::kAscii, PlyFormat::kBinaryLittleEndian, PlyFormat::kBinaryBigEndian}) {
      const std::string out = dir.file("rt.ply");
      write_ply(out, cloud, format);
      const PointCloud back = read_ply(out);
      expect_same_cloud(cloud, back, true, f.filename().string() + " format " + std::to_string(int(format)));
    }
    if (cloud.meta.encoding == "binary_little_endian") {  // nothing to reformat: the very same bytes
      write_ply(dir.file("same.ply"), cloud, PlyFormat::kBinaryLittleEndian);
      EXPECT_TRUE(s3d::test::file_bytes(dir.file("same.ply")) == s3d::test::file_bytes(f.string())) << f;
    }
  }
}

TEST(RealClouds, PlyContentMatchesTheDataReadme) {
  S3D_REQUIRE_DATA(root, "pointclouds");
  const PointCloud zipper = read_ply((root / "stanford_bunny/bun_zipper.ply").string());
  EXPECT_EQ(zipper.size(), 35947u);
  EXPECT_EQ(names_of(zipper), (std::vector<std::string>{"confidence", "intensity"}));
  EXPECT_EQ(zipper.meta.comments, (std::vector<std::string>{"zipper output"}));
  EXPECT_EQ(zipper.xyz[0], -0.0378297f);
  EXPECT_EQ(zipper.find("confidence")->value(0), static_cast<double>(0.850855f));
  ASSERT_EQ(zipper.elements.size(), 1u);
  const CloudElement& face = zipper.elements[0];
  EXPECT_EQ(face.name, "face");
  EXPECT_EQ(face.count, 69451u);
  ASSERT_EQ(face.properties.size(), 1u);
  EXPECT_EQ(face.properties[0].count_type, ScalarType::kUint8);
  EXPECT_EQ(face.properties[0].type, ScalarType::kInt32);
  EXPECT_EQ(face.properties[0].length(69450), 3u);
  EXPECT_EQ(face.properties[0].value(69450, 2), 17345.0);  // last line: 3 17277 17346 17345

  const PointCloud scan = read_ply((root / "stanford_bunny/bun000.ply").string());
  EXPECT_EQ(scan.size(), 40256u);
  EXPECT_EQ(scan.meta.obj_info.size(), 15u);
  ASSERT_EQ(scan.elements.size(), 1u);
  EXPECT_EQ(scan.elements[0].name, "range_grid");
  EXPECT_EQ(scan.elements[0].count, 204800u);
  std::size_t used = 0;
  for (std::size_t i = 0; i < scan.elements[0].count; ++i) used += scan.elements[0].properties[0].length(i);
  EXPECT_EQ(used, 40256u);  // every vertex sits in one grid cell

  const PointCloud aerial = read_ply((root / "aerial_vol_total/vol_total_498868.ply").string());
  EXPECT_EQ(aerial.size(), 498868u);
  EXPECT_EQ(names_of(aerial), (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(aerial.find("red")->type, ScalarType::kUint8);
  float zmin = 1e9f, zmax = -1e9f;
  for (std::size_t i = 0; i < aerial.size(); ++i)
    zmin = std::min(zmin, aerial.xyz[3 * i + 2]), zmax = std::max(zmax, aerial.xyz[3 * i + 2]);
  EXPECT_NEAR(zmin, 722.6, 0.1);
  EXPECT_NEAR(zmax, 789.9, 0.1);
}

TEST(RealClouds, KittiBinAndItsPlyTwinAgreeAndTheBinRoundTripsByteForByte) {
  S3D_REQUIRE_DATA(bin, "pointclouds/kitti_velodyne/000000.bin");
  S3D_REQUIRE_DATA(ply, "pointclouds/kitti_velodyne/000000.ply");
  const PointCloud a = read_point_cloud(bin.string());
  const PointCloud b = read_point_cloud(ply.string());
  ASSERT_EQ(a.size(), 115384u);
  expect_same_cloud(a, b, false, "bin vs ply");
  EXPECT_TRUE(std::memcmp(a.xyz.data(), b.xyz.data(), a.xyz.size() * 4) == 0);
  EXPECT_TRUE(a.find("intensity")->bytes == b.find("intensity")->bytes);
  CloudTempDir dir;
  write_point_cloud(dir.file("k.bin"), b);  // from the PLY twin
  EXPECT_TRUE(s3d::test::file_bytes(dir.file("k.bin")) == s3d::test::file_bytes(bin.string()));
}

TEST(RealClouds, EveryPcdRoundTripsInEveryDataKind) {
  S3D_REQUIRE_DATA(root, "pointclouds/pcl_pcd");
  const auto files = files_with(root, ".pcd");
  ASSERT_EQ(files.size(), 7u);
  CloudTempDir dir;
  for (const auto& f : files) {
    const PointCloud cloud = read_pcd(f.string());
    for (PcdData data : {PcdData::kAscii, PcdData::kBinary, PcdData::kBinaryCompressed}) {
      const std::string out = dir.file("rt.pcd");
      write_pcd(out, cloud, data);
      const PointCloud back = read_pcd(out);
      expect_same_cloud(cloud, back, true, f.filename().string() + " " + to_string(data));
      EXPECT_EQ(back.meta.encoding, to_string(data));
    }
    // PCD -> PLY -> PCD keeps every field (PLY names COUNT > 1 fields NAME_i; none here).
    write_point_cloud(dir.file("via.ply"), cloud);
    expect_same_cloud(cloud, read_point_cloud(dir.file("via.ply")), false, f.filename().string() + " via ply");
  }
}

TEST(RealClouds, PcdContentMatchesTheDataReadme) {
  S3D_REQUIRE_DATA(root, "pointclouds/pcl_pcd");
  struct Expect {
    const char* file;
    std::size_t points;
    std::vector<std::string> attributes;
    const char* data;
  };
  const Expect expects[] = {
      {"bunny.pcd", 397, {}, "ascii"},
      {"bun0.pcd", 397, {"normal_x", "normal_y", "normal_z", "curvature"}, "ascii"},
      {"milk.pcd", 13704, {}, "binary_compressed"},
      {"milk_color.pcd", 13704, {"rgba"}, "binary_compressed"},
      {"colored_cloud.pcd", 1000, {"rgb", "normal_x", "normal_y", "normal_z", "curvature"}, "binary"},
      {"table_scene_mug_stereo_textured.pcd", 307200, {"rgba"}, "binary_compressed"},
      {"cturtle.pcd", 167198, {"intensity"}, "binary_compressed"},
  };
  for (const auto& e : expects) {
    const PointCloud c = read_pcd((root / e.file).string());
    EXPECT_EQ(c.size(), e.points) << e.file;
    EXPECT_EQ(names_of(c), e.attributes) << e.file;
    EXPECT_EQ(c.meta.encoding, e.data) << e.file;
  }
  const PointCloud mug = read_pcd((root / "table_scene_mug_stereo_textured.pcd").string());
  EXPECT_EQ(mug.meta.width, 640u);
  EXPECT_EQ(mug.meta.height, 480u);
  EXPECT_EQ(mug.find("rgba")->type, ScalarType::kUint32);
  EXPECT_EQ(mug.meta.viewpoint, (std::array<double, 7>{0, 0, 0, 0, 1, 0, 0}));
  std::size_t nan_points = 0;
  for (std::size_t i = 0; i < mug.size(); ++i) nan_points += std::isnan(mug.xyz[3 * i]);
  EXPECT_EQ(nan_points, 97920u);
  const PointCloud colored = read_pcd((root / "colored_cloud.pcd").string());
  EXPECT_EQ(colored.meta.width, 1u);
  EXPECT_EQ(colored.meta.height, 1000u);
  // bunny.pcd (v.5, no VIEWPOINT) and bun0.pcd (v0.7 with normals) hold the same points.
  const PointCloud bunny = read_pcd((root / "bunny.pcd").string());
  EXPECT_EQ(bunny.meta.pcd_version, ".5");
  EXPECT_FALSE(bunny.meta.has_viewpoint);
  EXPECT_EQ(bunny.xyz, read_pcd((root / "bun0.pcd").string()).xyz);
  // milk_color is milk with colour.
  EXPECT_EQ(read_pcd((root / "milk.pcd").string()).xyz, read_pcd((root / "milk_color.pcd").string()).xyz);
}
