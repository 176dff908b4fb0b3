// The cloud layer: every attribute, list and element follows the points through row selection, voxel
// downsampling and three-NN interpolation. References are written here, item by item.
#include "s3d/points/cloud_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "s3d/core/errors.hpp"

namespace s3d::points {
namespace {

AttributeColumn list_column(const std::string& name, const std::vector<std::vector<int>>& lists) {
  AttributeColumn c;
  c.name = name;
  c.type = ScalarType::kInt32;
  c.is_list = true;
  c.offsets.push_back(0);
  for (const auto& l : lists) {
    for (int v : l) {
      const std::int32_t x = v;
      const auto* b = reinterpret_cast<const std::uint8_t*>(&x);
      c.bytes.insert(c.bytes.end(), b, b + 4);
    }
    c.offsets.push_back(c.offsets.back() + l.size());
  }
  return c;
}

CloudElement element(const std::string& name, const std::vector<std::vector<int>>& lists, const char* list_name) {
  CloudElement e;
  e.name = name;
  e.count = lists.size();
  e.properties.push_back(list_column(list_name, lists));
  return e;
}

std::vector<int> list_of(const AttributeColumn& c, std::size_t item) {
  std::vector<int> v;
  for (std::size_t k = 0; k < c.length(item); ++k) v.push_back(static_cast<int>(c.value(item, k)));
  return v;
}

// Five points, point i at (i, 0, 0): an intensity (float32), a colour (3 x uint8), a list per point; a camera
// element before the points, faces after them, and a range grid that refers to points.
PointCloud mesh() {
  PointCloud c;
  for (int i = 0; i < 5; ++i) c.xyz.insert(c.xyz.end(), {float(i), 0.f, 0.f});
  c.add_attribute("intensity", ScalarType::kFloat32);
  c.add_attribute("rgb", ScalarType::kUint8, 3);
  // References after the last add_attribute: adding a column may move the others.
  AttributeColumn& intensity = *c.find("intensity");
  AttributeColumn& rgb = *c.find("rgb");
  for (int i = 0; i < 5; ++i) {
    intensity.set_value(i, 0, 0.5 * i);
    for (int k = 0; k < 3; ++k) rgb.set_value(i, k, 10 * i + k);
  }
  c.attributes.push_back(list_column("tags", {{1}, {2, 2}, {}, {3}, {4, 4, 4}}));
  CloudElement camera;
  camera.name = "camera";
  camera.count = 1;
  camera.properties.push_back(list_column("view", {{7, 8}}));
  c.elements.push_back(camera);
  c.elements.push_back(element("face", {{0, 1, 2}, {2, 3, 4}, {0, 2, 4}}, "vertex_indices"));
  c.elements.push_back(element("range_grid", {{0}, {1}}, "vertex_indices"));
  c.meta.points_element_index = 1;
  c.meta.width = 5;
  c.meta.height = 1;
  return c;
}

TEST(SelectRows, AttributesListsAndFacesFollowTheirPoints) {
  const PointCloud in = mesh();
  ElementChanges changes;
  const PointCloud out = select_rows(in, {4, 2, 0, 2}, false, changes);
  ASSERT_EQ(out.size(), 4u);
  const int order[] = {4, 2, 0, 2};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out.xyz[3 * i], float(order[i]));
    EXPECT_EQ(out.find("intensity")->value(i), 0.5 * order[i]);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(out.find("rgb")->value(i, k), 10 * order[i] + k);
    EXPECT_EQ(list_of(*out.find("tags"), i), list_of(*in.find("tags"), order[i]));
  }
  EXPECT_EQ(out.meta.width, 0u);
  EXPECT_EQ(out.meta.height, 0u);
  // The camera refers to no point and stays; the range grid cannot survive a subset; of the faces only
  // (0, 2, 4) has all its points, renumbered to their new rows (2 -> its first new row, 1).
  ASSERT_EQ(out.elements.size(), 2u);
  EXPECT_EQ(out.elements[0].name, "camera");
  EXPECT_EQ(list_of(out.elements[0].properties[0], 0), (std::vector<int>{7, 8}));
  EXPECT_EQ(out.meta.points_element_index, 1u);
  EXPECT_EQ(out.elements[1].name, "face");
  ASSERT_EQ(out.elements[1].count, 1u);
  EXPECT_EQ(list_of(out.elements[1].properties[0], 0), (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(changes.faces_dropped, 2u);
  EXPECT_EQ(changes.elements_dropped, (std::vector<std::string>{"range_grid"}));

  ElementChanges dropped;
  const PointCloud bare = select_rows(in, {0, 1, 2, 3, 4}, true, dropped);
  EXPECT_TRUE(bare.elements.empty());
  EXPECT_EQ(dropped.elements_dropped, (std::vector<std::string>{"camera", "face", "range_grid"}));
  EXPECT_EQ(bare.meta.points_element_index, 0u);
}

TEST(SelectRows, EmptySelectionAndRowsOutsideTheCloud) {
  const PointCloud in = mesh();
  ElementChanges changes;
  const PointCloud none = select_rows(in, {}, false, changes);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.find("rgb")->bytes.size(), 0u);
  EXPECT_EQ(changes.faces_dropped, 3u);
  EXPECT_THROW(select_rows(in, {5}, false, changes), InvalidArgument);
  EXPECT_THROW(select_rows(in, {-1}, false, changes), InvalidArgument);
  PointCloud cloud = mesh();
  ElementChanges all;
  drop_elements(cloud, all);
  EXPECT_TRUE(cloud.elements.empty());
  EXPECT_EQ(all.elements_dropped.size(), 3u);
}

// Points 0, 1, 2 in voxel 0 and 3, 4 in voxel 1 (voxel size 2.5, world origin).
Voxels two_voxels(const PointCloud& in, VoxelAggregate aggregate) {
  VoxelizeParams p;
  p.voxel_size = {2.5f, 2.5f, 2.5f};
  p.aggregate = aggregate;
  VoxelEngine engine(Device::parse("cpu"));
  return engine.voxelize(in.view(), nullptr, p);
}

TEST(VoxelDownsample, MeanAggregatesEveryColumnAndRoundsIntegers) {
  const PointCloud in = mesh();
  const Voxels v = two_voxels(in, VoxelAggregate::kMean);
  ASSERT_EQ(v.count, 2);
  ElementChanges changes;
  const PointCloud out = voxel_downsample(in, v, VoxelAggregate::kMean, changes);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.xyz[0], 1.f);
  EXPECT_EQ(out.xyz[3], 3.5f);
  EXPECT_DOUBLE_EQ(out.find("intensity")->value(0), 0.5);
  EXPECT_DOUBLE_EQ(out.find("intensity")->value(1), 1.75);
  // red of points 0, 1, 2: 0, 10, 20 (mean 10); of 3, 4: 30, 40 (mean 35); green and blue +1, +2.
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out.find("rgb")->value(0, k), 10 + k);
    EXPECT_EQ(out.find("rgb")->value(1, k), 35 + k);
  }
  EXPECT_EQ(list_of(*out.find("tags"), 1), (std::vector<int>{3}));  // the representative's (point 3)
  EXPECT_EQ(changes.elements_dropped.size(), 3u);

  const VoxelFeatures f = voxel_features(in, v, VoxelAggregate::kMean);
  EXPECT_EQ(f.names, (std::vector<std::string>{"x", "y", "z", "intensity", "rgb[0]", "rgb[1]", "rgb[2]"}));
  ASSERT_EQ(f.values.size(), 14u);
  const std::vector<float> second(f.values.begin() + 7, f.values.end());
  EXPECT_EQ(second, (std::vector<float>{3.5f, 0.f, 0.f, 1.75f, 35.f, 36.f, 37.f}));
}

TEST(VoxelDownsample, FirstKeepsTheRepresentativesValuesAndRefusesOtherVoxels) {
  const PointCloud in = mesh();
  const Voxels v = two_voxels(in, VoxelAggregate::kFirst);
  ElementChanges changes;
  const PointCloud out = voxel_downsample(in, v, VoxelAggregate::kFirst, changes);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.xyz[3], 3.f);
  EXPECT_EQ(out.find("intensity")->value(1), 1.5);
  EXPECT_EQ(out.find("rgb")->value(1, 2), 32);
  PointCloud fewer;
  fewer.xyz.assign(in.xyz.begin(), in.xyz.begin() + 12);
  EXPECT_THROW(voxel_downsample(in, two_voxels(fewer, VoxelAggregate::kFirst), VoxelAggregate::kFirst, changes),
               InvalidArgument);
}

TEST(InterpolateColumns, ThreeNearestWeightsSummedInDoubleIntegersRounded) {
  const PointCloud sparse = mesh();
  PointCloud dense;
  dense.xyz = {0.25f, 0.f, 0.f, 3.9f, 0.f, 0.f, 2.f, 1.f, 0.f};
  dense.add_attribute("intensity", ScalarType::kFloat64);  // overwritten by the sparse one
  EXPECT_EQ(missing_columns(sparse, dense), (std::vector<std::string>{"rgb"}));
  NeighborEngine engine(Device::parse("cpu"));
  const Interpolation w = engine.three_nn(sparse.view(), std::as_const(dense).view());
  interpolate_columns(dense, sparse, {"intensity", "rgb"}, w);
  for (std::size_t q = 0; q < dense.size(); ++q) {
    double intensity = 0.0, red = 0.0;
    for (int j = 0; j < 3; ++j) {
      const std::int32_t i = w.indices[3 * q + j];
      intensity += double(w.weights[3 * q + j]) * sparse.find("intensity")->value(i);
      red += double(w.weights[3 * q + j]) * sparse.find("rgb")->value(i, 0);
    }
    EXPECT_EQ(dense.find("intensity")->value(q), intensity);
    EXPECT_EQ(dense.find("rgb")->value(q, 0), std::nearbyint(red));
  }
  EXPECT_EQ(dense.find("rgb")->type, ScalarType::kUint8);
  EXPECT_THROW(interpolate_columns(dense, sparse, {"tags"}, w), InvalidArgument);
  EXPECT_THROW(interpolate_columns(dense, sparse, {"absent"}, w), InvalidArgument);
  PointCloud other = dense;
  other.resize(2);
  EXPECT_THROW(interpolate_columns(other, sparse, {"rgb"}, w), InvalidArgument);
  PointCloud clash = dense;
  clash.attributes.clear();
  clash.add_attribute("rgb", ScalarType::kUint8, 4);
  EXPECT_THROW(interpolate_columns(clash, sparse, {"rgb"}, w), DataError);
}

// Far from the origin, as georeferenced clouds are: x, y, z stored as doubles beside the float positions.
PointCloud far_cloud(const std::vector<double>& xyz) {
  PointCloud c;
  for (double v : xyz) c.xyz.push_back(static_cast<float>(v));
  const char* names[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    AttributeColumn& col = c.add_attribute(names[a], ScalarType::kFloat64);
    for (std::size_t i = 0; i < c.size(); ++i) col.set_value(i, 0, xyz[3 * i + a]);
  }
  return c;
}

TEST(Coordinates, DoubleColumnsKeepTheirPrecisionRelativeToTheCentre) {
  const PointCloud c = far_cloud({500000.25, 4000000.5, 10.0, 500001.75, 4000001.0, 12.0, 500000.5, 4000000.75, 11.0});
  const std::array<double, 3> centre = bbox_centre(c);
  EXPECT_EQ(centre, (std::array<double, 3>{500001.0, 4000000.75, 11.0}));
  const std::vector<float> local = local_positions(c, centre);
  // Exact in double, rounded once: the float positions (500000.25 is not a float) would lose the quarters.
  EXPECT_EQ(local, (std::vector<float>{-0.75f, -0.25f, -1.f, 0.75f, 0.25f, 1.f, -0.5f, 0.f, 0.f}));
  EXPECT_FALSE(first_non_finite(c).has_value());
  EXPECT_EQ(finite_rows(c), (std::vector<std::int64_t>{0, 1, 2}));
}

TEST(Coordinates, NonFiniteAndBeyondFloatRangeAreFound) {
  PointCloud c = far_cloud({0, 0, 0, 1, 1e300, 1, 2, 2, 2, 3, 3, 3});
  c.find("z")->set_value(3, 0, std::nan(""));
  c.xyz[11] = std::nanf("");
  const std::optional<NonFinitePoint> bad = first_non_finite(c);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->row, 1u);
  EXPECT_EQ(bad->axis, 1);
  EXPECT_EQ(bad->value, 1e300);  // finite as a double, infinite as the float position
  EXPECT_EQ(finite_rows(c), (std::vector<std::int64_t>{0, 2}));
  PointCloud plain;
  plain.xyz = {0.f, INFINITY, 0.f};
  ASSERT_TRUE(first_non_finite(plain).has_value());
  EXPECT_EQ(first_non_finite(plain)->axis, 1);
}

}  // namespace
}  // namespace s3d::points
