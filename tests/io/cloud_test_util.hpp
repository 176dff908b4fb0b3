#pragma once
// Helpers for the point-cloud format tests: a scratch folder, file bytes, and a field-by-field cloud
// comparison that treats NaN as equal to NaN (ascii writes every NaN as "nan").
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "s3d/core/point_cloud.hpp"

namespace s3d::test {

struct CloudTempDir {
  std::filesystem::path path;
  CloudTempDir() {
    path = std::filesystem::temp_directory_path() / ("s3d_cloud_test_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(path);
  }
  ~CloudTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }
};

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

inline bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

/// Non-fatal failures for every difference in values (positions, columns, elements); with `layout`, also
/// the header facts (comments, obj_info, property order, element placement, organisation, viewpoint).
inline void expect_same_cloud(const PointCloud& a, const PointCloud& b, bool layout, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  std::size_t position_diffs = 0;
  for (std::size_t i = 0; i < a.xyz.size(); ++i) position_diffs += !same_value(a.xyz[i], b.xyz[i]);
  EXPECT_EQ(position_diffs, 0u) << what;
  auto same_columns = [&](const AttributeColumn& x, const AttributeColumn& y, std::size_t items, const std::string& w) {
    EXPECT_EQ(x.name, y.name) << w;
    EXPECT_EQ(x.type, y.type) << w << " " << x.name;
    EXPECT_EQ(x.components, y.components) << w << " " << x.name;
    ASSERT_EQ(x.is_list, y.is_list) << w << " " << x.name;
    if (x.is_list) {
      EXPECT_EQ(x.count_type, y.count_type) << w << " " << x.name;
      ASSERT_EQ(x.offsets, y.offsets) << w << " " << x.name;
    }
    ASSERT_EQ(x.bytes.size(), y.bytes.size()) << w << " " << x.name;
    if (!is_floating(x.type)) {
      EXPECT_TRUE(x.bytes == y.bytes) << w << " " << x.name;
      return;
    }
    const std::size_t values = x.bytes.size() / scalar_size(x.type);
    std::size_t diffs = 0;
    for (std::size_t v = 0; v < values; ++v) diffs += !same_value(x.value(0, v), y.value(0, v));
    EXPECT_EQ(diffs, 0u) << w << " " << x.name << " (" << items << " items)";
  };
  ASSERT_EQ(a.attributes.size(), b.attributes.size()) << what;
  for (std::size_t k = 0; k < a.attributes.size(); ++k)
    same_columns(a.attributes[k], b.attributes[k], a.size(), what + " attribute");
  ASSERT_EQ(a.elements.size(), b.elements.size()) << what;
  for (std::size_t e = 0; e < a.elements.size(); ++e) {
    EXPECT_EQ(a.elements[e].name, b.elements[e].name) << what;
    ASSERT_EQ(a.elements[e].count, b.elements[e].count) << what;
    ASSERT_EQ(a.elements[e].properties.size(), b.elements[e].properties.size()) << what;
    for (std::size_t k = 0; k < a.elements[e].properties.size(); ++k)
      same_columns(a.elements[e].properties[k], b.elements[e].properties[k], a.elements[e].count,
                   what + " element " + a.elements[e].name);
  }
  if (!layout) return;
  EXPECT_EQ(a.meta.comments, b.meta.comments) << what;
  EXPECT_EQ(a.meta.obj_info, b.meta.obj_info) << what;
  EXPECT_EQ(a.meta.property_order, b.meta.property_order) << what;
  EXPECT_EQ(a.meta.points_element_index, b.meta.points_element_index) << what;
  EXPECT_EQ(a.meta.width, b.meta.width) << what;
  EXPECT_EQ(a.meta.height, b.meta.height) << what;
  EXPECT_EQ(a.meta.viewpoint, b.meta.viewpoint) << what;
}

}  // namespace s3d::test
