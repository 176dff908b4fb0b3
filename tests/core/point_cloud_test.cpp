// PointCloud: typed columns, lists, validation, views.
#include <gtest/gtest.h>

#include <type_traits>

#include "s3d/core/errors.hpp"
#include "s3d/core/point_cloud.hpp"

using s3d::AttributeColumn;
using s3d::PointCloud;
using s3d::ScalarType;

TEST(PointCloud, EveryScalarTypeStoresAndReadsBack) {
  const ScalarType all[] = {ScalarType::kInt8,  ScalarType::kUint8,  ScalarType::kInt16,   ScalarType::kUint16,
                            ScalarType::kInt32, ScalarType::kUint32, ScalarType::kFloat32, ScalarType::kFloat64};
  const std::size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 8};
  const double samples[] = {-128, 255, -32768, 65535, -2147483648.0, 4294967295.0, 0.1f, 0.1};
  PointCloud cloud;
  cloud.resize(2);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(s3d::scalar_size(all[k]), sizes[k]);
    AttributeColumn& c = cloud.add_attribute(std::string("a") + s3d::scalar_name(all[k]), all[k]);
    EXPECT_EQ(c.bytes.size(), 2 * sizes[k]);
    c.set_value(1, 0, samples[k]);
    EXPECT_EQ(c.value(1), samples[k]) << s3d::scalar_name(all[k]);
    EXPECT_EQ(c.value(0), 0.0);
  }
  EXPECT_NO_THROW(cloud.validate());
  EXPECT_STREQ(s3d::scalar_name(ScalarType::kFloat64), "float64");
}

TEST(PointCloud, AttributesResizeAndValidate) {
  PointCloud cloud;
  cloud.xyz = {1, 2, 3, 4, 5, 6};
  AttributeColumn& normal = cloud.add_attribute("normal", ScalarType::kFloat32, 3);
  EXPECT_EQ(normal.bytes.size(), 2u * 3 * 4);
  EXPECT_THROW(cloud.add_attribute("normal", ScalarType::kUint8), s3d::InvalidArgument);
  EXPECT_THROW(cloud.add_attribute("", ScalarType::kUint8), s3d::InvalidArgument);
  EXPECT_THROW(cloud.add_attribute("w", ScalarType::kUint8, 0), s3d::InvalidArgument);
  cloud.resize(5);
  EXPECT_EQ(cloud.size(), 5u);
  EXPECT_EQ(cloud.find("normal")->bytes.size(), 5u * 3 * 4);
  EXPECT_EQ(cloud.find("nothing"), nullptr);
  cloud.find("normal")->bytes.pop_back();
  EXPECT_THROW(cloud.validate(), s3d::DataError);
}

TEST(PointCloud, ListsHoldVariableLengthsAndAreChecked) {
  PointCloud cloud;
  cloud.resize(2);
  AttributeColumn list;
  list.name = "neighbours";
  list.is_list = true;
  list.type = ScalarType::kInt32;
  list.offsets = {0, 3, 4};
  list.bytes.resize(4 * 4);
  cloud.attributes.push_back(list);
  cloud.attributes.back().set_value(1, 0, -7);
  EXPECT_EQ(cloud.attributes.back().value(1, 0), -7.0);
  EXPECT_EQ(cloud.attributes.back().length(0), 3u);
  EXPECT_EQ(cloud.attributes.back().length(1), 1u);
  EXPECT_NO_THROW(cloud.validate());
  EXPECT_THROW(cloud.resize(3), s3d::InvalidArgument);
  cloud.attributes.back().offsets = {0, 5, 4};
  EXPECT_THROW(cloud.validate(), s3d::DataError);
  // Elements are checked against their own count.
  cloud.attributes.pop_back();
  s3d::CloudElement face{"face", 1, {list}};
  face.properties[0].offsets = {0, 4};
  cloud.elements.push_back(face);
  EXPECT_NO_THROW(cloud.validate());
  cloud.elements[0].count = 2;
  EXPECT_THROW(cloud.validate(), s3d::DataError);
}

TEST(PointCloud, ViewIsTriviallyCopyableAndAddressesThePositions) {
  static_assert(std::is_trivially_copyable_v<s3d::PointsView<const float>>);
  PointCloud cloud;
  cloud.xyz = {1, 2, 3, 4, 5, 6};
  const auto v = static_cast<const PointCloud&>(cloud).view();
  EXPECT_EQ(v.size, 2u);
  EXPECT_EQ(v.point(1)[2], 6.0f);
  EXPECT_EQ(v.xyz, cloud.xyz.data());
}
