// Marching cubes and the surface cloud: the table against the cube cases, a sphere's mesh on the sphere
// (voxel/10), closed, consistently oriented and with shared vertices, the cloud on the sphere, empty volumes,
// thread-count and slab-size independence, and the CUDA mesh and cloud against the CPU's bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "marching_cubes_tables.hpp"
#include "s3d/core/parallel.hpp"
#include "volume_common.hpp"
#include "volume_test_support.hpp"

namespace s3d::fusion::test {
namespace {

TEST(MarchingCubesTable, TrianglesUseExactlyTheSignChangingEdgesFacingOutside) {
  const int corner_of_edge[12][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {5, 6},
                                     {6, 7}, {7, 4}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
  auto corner = [](int c) { return Eigen::Vector3d(detail::corner_dx(c), detail::corner_dy(c), detail::corner_dz(c)); };
  for (int cube = 0; cube < 256; ++cube) {
    std::set<int> used, changing;
    int count = 0;
    for (int e = 0; e < 16 && detail::kMcTriangles[cube][e] >= 0; ++e, ++count)
      used.insert(detail::kMcTriangles[cube][e]);
    ASSERT_EQ(count % 3, 0) << cube;
    ASSERT_EQ(count / 3, detail::kMcTriangleCount[cube]) << cube;
    for (int e = 0; e < 12; ++e)
      if (((cube >> corner_of_edge[e][0]) & 1) != ((cube >> corner_of_edge[e][1]) & 1)) changing.insert(e);
    ASSERT_EQ(used, changing) << "case " << cube;
    // The edge numbering of cube_edge: the owner voxel plus the axis reach the same two corners.
    for (int e = 0; e < 12; ++e) {
      const int packed = detail::cube_edge(e);
      const Eigen::Vector3d a(packed & 1, (packed >> 1) & 1, (packed >> 2) & 1);
      Eigen::Vector3d b = a;
      b[packed >> 3] += 1.0;
      const Eigen::Vector3d c0 = corner(corner_of_edge[e][0]), c1 = corner(corner_of_edge[e][1]);
      ASSERT_TRUE((a == c0 && b == c1) || (a == c1 && b == c0)) << "edge " << e;
    }
    if (count == 0) continue;
    // Emitted winding (with kMcReverseWinding) is counter-clockwise seen from outside: each triangle's normal
    // points from the inside ends of its three edges towards their outside ends.
    auto mid = [&](int e) -> Eigen::Vector3d {
      return 0.5 * (corner(corner_of_edge[e][0]) + corner(corner_of_edge[e][1]));
    };
    for (int t = 0; t < count / 3; ++t) {
      int e[3] = {detail::kMcTriangles[cube][3 * t], detail::kMcTriangles[cube][3 * t + 1],
                  detail::kMcTriangles[cube][3 * t + 2]};
      if (detail::kMcReverseWinding) std::swap(e[1], e[2]);
      Eigen::Vector3d out_dir = Eigen::Vector3d::Zero();
      for (int q = 0; q < 3; ++q) {
        const int a = corner_of_edge[e[q]][0], b = corner_of_edge[e[q]][1];
        const bool a_inside = (cube >> a) & 1;
        out_dir += a_inside ? corner(b) - corner(a) : corner(a) - corner(b);
      }
      const Eigen::Vector3d normal = (mid(e[1]) - mid(e[0])).cross(mid(e[2]) - mid(e[0]));
      ASSERT_GT(normal.dot(out_dir), 0.0) << "case " << cube << " triangle " << t;
    }
  }
}

class VolumeMesh : public ::testing::TestWithParam<Device> {};

/// A sphere of radius 0.3 m at the origin in a 0.96 m cube of 48^3 voxels (2 cm).
const Eigen::Vector3d kCentre(0.0, 0.0, 0.0);
constexpr double kRadius = 0.3;
constexpr double kVoxel = 0.02;

VolumeParams sphere_params() {
  VolumeParams p;
  p.resolution = {48, 48, 48};
  p.size = {0.96f, 0.96f, 0.96f};
  p.origin = {-0.48f, -0.48f, -0.48f};
  p.truncation = 0.06f;
  return p;
}

/// 14 views at 1.2 m from the centre: the 6 axis directions and the 8 diagonals.
std::vector<Eigen::Isometry3d> sphere_views() {
  std::vector<Eigen::Isometry3d> views;
  std::vector<Eigen::Vector3d> dirs = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  for (int s = 0; s < 8; ++s) dirs.emplace_back(s & 1 ? 1 : -1, s & 2 ? 1 : -1, s & 4 ? 1 : -1);
  for (const Eigen::Vector3d& d : dirs) views.push_back(look_at(kCentre + 1.2 * d.normalized(), kCentre));
  return views;
}

void integrate_sphere(TestVolume& volume, const std::vector<Eigen::Isometry3d>& views) {
  for (const Eigen::Isometry3d& pose : views)
    volume.integrate(render_sphere(synthetic_camera(), pose, 640, 480, kCentre, kRadius), synthetic_camera(), pose);
}

Eigen::Vector3d at3(const std::vector<float>& v, std::size_t i) {
  return Eigen::Vector3d(v[3 * i], v[3 * i + 1], v[3 * i + 2]);
}

TEST_P(VolumeMesh, SingleViewVerticesLieOnTheSphere) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  TestVolume volume(GetParam(), sphere_params());
  const Eigen::Isometry3d pose = look_at(Eigen::Vector3d(0.1, -0.2, -1.2), kCentre);
  integrate_sphere(volume, {pose});
  const Mesh mesh = volume.mesh();
  const std::size_t nv = mesh.vertices.size() / 3;
  ASSERT_GT(nv, 500u);
  int checked = 0;
  for (std::size_t i = 0; i < nv; ++i) {
    const Eigen::Vector3d v = at3(mesh.vertices, i), n = at3(mesh.normals, i);
    const Eigen::Vector3d radial = (v - kCentre).normalized();
    const Eigen::Vector3d to_camera = (pose.translation() - v).normalized();
    if (radial.dot(to_camera) < 0.6) continue;  // the part of the cap seen within ~50 degrees of head-on
    ASSERT_NEAR((v - kCentre).norm(), kRadius, kVoxel / 10) << "vertex " << i;
    ASSERT_GT(n.dot(radial), 0.98) << "vertex " << i;
    ++checked;
  }
  EXPECT_GT(checked, 300);
  const SurfaceCloud cloud = volume.cloud();
  const std::size_t np = cloud.points.size() / 3;
  ASSERT_GT(np, 300u);
  int cloud_checked = 0;
  for (std::size_t i = 0; i < np; ++i) {
    const Eigen::Vector3d v = at3(cloud.points, i), n = at3(cloud.normals, i);
    const Eigen::Vector3d radial = (v - kCentre).normalized();
    if (radial.dot((pose.translation() - v).normalized()) < 0.6) continue;
    ASSERT_NEAR((v - kCentre).norm(), kRadius, kVoxel / 10) << "point " << i;
    ASSERT_GT(n.dot(radial), 0.98) << "point " << i;
    ++cloud_checked;
  }
  EXPECT_GT(cloud_checked, 300);
}

/// Each undirected edge in exactly two triangles, each directed edge once (consistent orientation), every
/// vertex referenced, no degenerate triangle.
void expect_closed_manifold(const Mesh& mesh) {
  const std::size_t nv = mesh.vertices.size() / 3, nt = mesh.triangles.size() / 3;
  std::map<std::pair<int, int>, int> directed;
  std::vector<char> referenced(nv, 0);
  for (std::size_t t = 0; t < nt; ++t) {
    const int* tri = &mesh.triangles[3 * t];
    for (int c = 0; c < 3; ++c) {
      ASSERT_GE(tri[c], 0);
      ASSERT_LT(static_cast<std::size_t>(tri[c]), nv);
      referenced[tri[c]] = 1;
      ++directed[{tri[c], tri[(c + 1) % 3]}];
    }
    ASSERT_TRUE(tri[0] != tri[1] && tri[1] != tri[2] && tri[0] != tri[2]) << "triangle " << t;
  }
  for (const auto& [edge, n] : directed) {
    ASSERT_EQ(n, 1) << "directed edge " << edge.first << "->" << edge.second << " used twice";
    ASSERT_EQ(directed.count({edge.second, edge.first}), 1u) << "boundary edge " << edge.first << "-" << edge.second;
  }
  for (std::size_t v = 0; v < nv; ++v) ASSERT_TRUE(referenced[v]) << "vertex " << v << " unreferenced";
}

TEST_P(VolumeMesh, ClosedSphereIsAnOrientedManifold) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  TestVolume volume(GetParam(), sphere_params());
  integrate_sphere(volume, sphere_views());
  const Mesh mesh = volume.mesh();
  ASSERT_GT(mesh.triangles.size(), 3000u);
  expect_closed_manifold(mesh);
  const std::size_t nv = mesh.vertices.size() / 3;
  double worst = 0.0;
  std::vector<double> err;
  for (std::size_t i = 0; i < nv; ++i) {
    err.push_back(std::abs((at3(mesh.vertices, i) - kCentre).norm() - kRadius));
    worst = std::max(worst, err.back());
  }
  // Fused from 14 views, the projective distances of grazing views bias the crossing (KinFu's along-the-ray
  // sdf): measured median 1.0 mm, 99th percentile 4.5 mm, worst 6.7 mm at 2 cm voxels. Head-on vertices
  // meet voxel/10 (SingleViewVerticesLieOnTheSphere).
  std::sort(err.begin(), err.end());
  EXPECT_LT(err[err.size() / 2], kVoxel / 10);
  EXPECT_LT(worst, kVoxel / 2);
  RecordProperty("worst_radius_error_m", std::to_string(worst));
  for (std::size_t t = 0; t < mesh.triangles.size() / 3; ++t) {
    const Eigen::Vector3d a = at3(mesh.vertices, mesh.triangles[3 * t]),
                          b = at3(mesh.vertices, mesh.triangles[3 * t + 1]),
                          c = at3(mesh.vertices, mesh.triangles[3 * t + 2]);
    ASSERT_GT((b - a).cross(c - a).dot((a + b + c) / 3.0 - kCentre), 0.0) << "triangle " << t << " faces inwards";
  }
}

TEST_P(VolumeMesh, EmptyVolumeGivesEmptyMeshAndCloud) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  TestVolume volume(GetParam(), sphere_params());
  Mesh mesh = volume.mesh();
  EXPECT_TRUE(mesh.vertices.empty() && mesh.normals.empty() && mesh.triangles.empty());
  SurfaceCloud cloud = volume.cloud();
  EXPECT_TRUE(cloud.points.empty() && cloud.normals.empty());
  // Free space only (a plane far behind the volume): still nothing.
  volume.integrate(Image<float>(640, 480, 1, 5.0f), synthetic_camera(), look_at(Eigen::Vector3d(0, 0, -1.5), kCentre));
  mesh = volume.mesh();
  EXPECT_TRUE(mesh.vertices.empty() && mesh.triangles.empty());
  EXPECT_TRUE(volume.cloud().points.empty());
  // A one-voxel-thick volume has no cubes.
  VolumeParams flat = sphere_params();
  flat.resolution = {48, 48, 1};
  flat.size = {0.96f, 0.96f, 0.02f};
  TestVolume slab(GetParam(), flat);
  integrate_sphere(slab, sphere_views());
  EXPECT_TRUE(slab.mesh().triangles.empty());
}

TEST(VolumeMeshCpu, ResultDoesNotDependOnTheThreadCount) {
  const int threads = cpu_threads();
  TestVolume one(Device(Device::Kind::kCpu), sphere_params()), two(Device(Device::Kind::kCpu), sphere_params());
  set_cpu_threads(1);
  integrate_sphere(one, sphere_views());
  const Mesh m1 = one.mesh();
  const SurfaceCloud c1 = one.cloud();
  set_cpu_threads(3);
  integrate_sphere(two, sphere_views());
  const Mesh m2 = two.mesh();
  const SurfaceCloud c2 = two.cloud();
  set_cpu_threads(threads);
  ASSERT_EQ(m1.vertices.size(), m2.vertices.size());
  EXPECT_TRUE(same_bits(m1.vertices.data(), m2.vertices.data(), m1.vertices.size()));
  EXPECT_TRUE(same_bits(m1.normals.data(), m2.normals.data(), m1.normals.size()));
  EXPECT_EQ(m1.triangles, m2.triangles);
  ASSERT_EQ(c1.points.size(), c2.points.size());
  EXPECT_TRUE(same_bits(c1.points.data(), c2.points.data(), c1.points.size()));
}

::testing::AssertionResult same_mesh(const Mesh& a, const Mesh& b) {
  if (a.vertices.size() != b.vertices.size() || a.triangles.size() != b.triangles.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.vertices.size() / 3 << " vs " << b.vertices.size() / 3
                                         << " vertices, " << a.triangles.size() / 3 << " vs " << b.triangles.size() / 3
                                         << " triangles";
  auto r = same_bits(a.vertices.data(), b.vertices.data(), a.vertices.size());
  if (!r) return r << " (vertices)";
  r = same_bits(a.normals.data(), b.normals.data(), a.normals.size());
  if (!r) return r << " (normals)";
  if (a.triangles != b.triangles) return ::testing::AssertionFailure() << "triangles differ";
  if (a.colors != b.colors) return ::testing::AssertionFailure() << "vertex colours differ";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_cloud(const SurfaceCloud& a, const SurfaceCloud& b) {
  if (a.points.size() != b.points.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.points.size() / 3 << " vs " << b.points.size() / 3;
  auto r = same_bits(a.points.data(), b.points.data(), a.points.size());
  if (!r) return r << " (points)";
  r = same_bits(a.normals.data(), b.normals.data(), a.normals.size());
  if (!r) return r << " (normals)";
  if (a.colors != b.colors) return ::testing::AssertionFailure() << "point colours differ";
  return ::testing::AssertionSuccess();
}

TEST_P(VolumeMesh, OddResolutionMatchesTheCpu) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  VolumeParams p;
  p.resolution = {37, 41, 29};
  p.size = {0.74f, 0.82f, 0.58f};
  p.origin = {-0.37f, -0.41f, -0.29f};
  p.truncation = 0.05f;
  TestVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  for (const Eigen::Isometry3d& pose : sphere_views()) {
    const Image<float> depth = render_sphere(synthetic_camera(), pose, 631, 479, kCentre, 0.25);
    cpu.integrate(depth, synthetic_camera(), pose);
    gpu.integrate(depth, synthetic_camera(), pose);
  }
  const Mesh mesh = cpu.mesh();
  EXPECT_GT(mesh.triangles.size(), 1000u);
  EXPECT_TRUE(same_mesh(mesh, gpu.mesh()));
  EXPECT_TRUE(same_cloud(cpu.cloud(), gpu.cloud()));
}

TEST_P(VolumeMesh, SlabsDoNotChangeTheMeshOrTheCloud) {
  // Extraction runs over slabs of z slices (volume_common.hpp: MeshSlab); one slab of the whole depth is the
  // plain whole-volume pass. No seam may show: the same vertices, triangles, colours and points at any slab size.
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  VolumeParams p = sphere_params();
  p.color = true;
  TestVolume volume(GetParam(), p);
  const CameraIntrinsics cam = synthetic_camera();
  Image<std::uint8_t> rgb(640, 480, 3);
  for (int y = 0; y < 480; ++y)
    for (int x = 0; x < 640; ++x) {
      std::uint8_t* c = &rgb.data[3 * (static_cast<std::size_t>(y) * 640 + x)];
      c[0] = static_cast<std::uint8_t>(x * 255 / 639), c[1] = static_cast<std::uint8_t>(y * 255 / 479), c[2] = 77;
    }
  for (const Eigen::Isometry3d& pose : sphere_views())
    volume.integrate(render_sphere(cam, pose, 640, 480, kCentre, kRadius), cam, pose, rgb.data.data());
  const int depth = p.resolution[2];
  const Mesh whole = volume.mesh(depth);
  const SurfaceCloud whole_cloud = volume.cloud(depth);
  ASSERT_GT(whole.triangles.size(), 3000u);
  ASSERT_EQ(whole.colors.size(), whole.vertices.size());
  for (int slices : {1, 2, 5, 16, depth - 1, 0}) {
    SCOPED_TRACE("slab of " + std::to_string(slices) + " slices");
    EXPECT_TRUE(same_mesh(whole, volume.mesh(slices)));
    EXPECT_TRUE(same_cloud(whole_cloud, volume.cloud(slices)));
  }
  expect_closed_manifold(volume.mesh(1));
}

TEST_P(VolumeMesh, RealMeshAndCloudMatchTheCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  const VolumeParams p = redkitchen_volume(160, 0.06f);
  TestVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  for (int f : {0, 30, 60, 90}) {
    const Image<float> depth = s3d::test::read_redkitchen_depth(f);
    const Eigen::Isometry3d pose = read_redkitchen_pose(f);
    cpu.integrate(depth, redkitchen_camera(), pose);
    gpu.integrate(depth, redkitchen_camera(), pose);
  }
  const Mesh mesh = cpu.mesh();
  EXPECT_GT(mesh.triangles.size(), 30000u);
  EXPECT_TRUE(same_mesh(mesh, gpu.mesh()));
  EXPECT_TRUE(same_cloud(cpu.cloud(), gpu.cloud()));
}

TEST_P(VolumeMesh, RealColoredMeshAndCloudMatchTheCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  VolumeParams p = redkitchen_volume(128, 0.06f);
  p.color = true;
  TestVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  for (int f : {0, 40, 80}) {
    const Image<float> depth = s3d::test::read_redkitchen_depth(f);
    const Image<std::uint8_t> rgb = s3d::test::read_redkitchen_color(f);
    cpu.integrate(depth, redkitchen_camera(), read_redkitchen_pose(f), rgb.data.data());
    gpu.integrate(depth, redkitchen_camera(), read_redkitchen_pose(f), rgb.data.data());
  }
  const Mesh mesh = cpu.mesh();
  ASSERT_GT(mesh.triangles.size(), 10000u);
  ASSERT_EQ(mesh.colors.size(), mesh.vertices.size());
  EXPECT_TRUE(same_mesh(mesh, gpu.mesh()));
  EXPECT_TRUE(same_mesh(mesh, gpu.mesh(7))) << "slabs of 7 slices";
  const SurfaceCloud cloud = cpu.cloud();
  ASSERT_EQ(cloud.colors.size(), cloud.points.size());
  EXPECT_TRUE(same_cloud(cloud, gpu.cloud()));
  EXPECT_TRUE(same_cloud(cloud, gpu.cloud(7))) << "slabs of 7 slices";
}

TEST_P(VolumeMesh, ConstantColorGivesEveryVertexThatColor) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  VolumeParams p = sphere_params();
  p.color = true;
  TestVolume volume(GetParam(), p);
  const CameraIntrinsics cam = synthetic_camera();
  Image<std::uint8_t> rgb(631, 479, 3);
  for (std::size_t i = 0; i < rgb.data.size(); i += 3) rgb.data[i] = 201, rgb.data[i + 1] = 17, rgb.data[i + 2] = 90;
  for (const Eigen::Isometry3d& pose : sphere_views())
    volume.integrate(render_sphere(cam, pose, 631, 479, kCentre, kRadius), cam, pose, rgb.data.data());
  const Mesh mesh = volume.mesh();
  ASSERT_GT(mesh.vertices.size(), 3000u);
  ASSERT_EQ(mesh.colors.size(), mesh.vertices.size());
  for (std::size_t i = 0; i < mesh.colors.size(); i += 3) {
    ASSERT_EQ(mesh.colors[i], 201) << "vertex " << i / 3;
    ASSERT_EQ(mesh.colors[i + 1], 17) << "vertex " << i / 3;
    ASSERT_EQ(mesh.colors[i + 2], 90) << "vertex " << i / 3;
  }
  // Without colour: no colours.
  TestVolume plain(GetParam(), sphere_params());
  integrate_sphere(plain, sphere_views());
  EXPECT_TRUE(plain.mesh().colors.empty());
  EXPECT_TRUE(plain.cloud().colors.empty());
}

TEST(VolumeMeshCpu, RealMeshIsAnIndexedManifoldPiece) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  const VolumeParams p = redkitchen_volume(128, 0.07f);
  TestVolume volume(Device(Device::Kind::kCpu), p);
  volume.integrate(s3d::test::read_redkitchen_depth(0), redkitchen_camera(), read_redkitchen_pose(0));
  const Mesh mesh = volume.mesh();
  const std::size_t nv = mesh.vertices.size() / 3, nt = mesh.triangles.size() / 3;
  ASSERT_GT(nt, 5000u);
  // Shared vertices: an indexed mesh has far fewer vertices than 3 per triangle (about half as many as
  // triangles on a closed surface), and no directed edge twice.
  EXPECT_LT(nv, nt);
  std::set<std::pair<int, int>> directed;
  std::vector<char> referenced(nv, 0);
  for (std::size_t t = 0; t < nt; ++t)
    for (int k = 0; k < 3; ++k) {
      referenced[mesh.triangles[3 * t + k]] = 1;
      ASSERT_TRUE(directed.insert({mesh.triangles[3 * t + k], mesh.triangles[3 * t + (k + 1) % 3]}).second);
    }
  for (std::size_t v = 0; v < nv; ++v) ASSERT_TRUE(referenced[v]);
  // Vertices come out sorted by their owner voxel, so consecutive vertices are spatially ordered along z.
  for (std::size_t v = 1; v < nv; ++v) ASSERT_GE(mesh.vertices[3 * v + 2] + 0.05f, mesh.vertices[3 * (v - 1) + 2]);
}

INSTANTIATE_TEST_SUITE_P(Devices, VolumeMesh, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion::test
