// The small pieces between a file and the kernels: rows of the computed cloud against rows of the file
// (--drop-invalid), positions of a selection, sparse coordinates from rows and from voxels, FPS's sample count
// for a ratio and its seeded start. References are written here, value by value.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/points/cloud_layer.hpp"
#include "s3d/points/fps.hpp"
#include "s3d/points/rulebook.hpp"
#include "s3d/points/voxels.hpp"

namespace s3d::points {
namespace {

// A file of 6 rows whose rows 1 and 4 were dropped: the computed cloud's rows 0..3 are the file's 0, 2, 3, 5.
const std::vector<std::int64_t> kRows{0, 2, 3, 5};

TEST(FileRows, IndicesBecomeRowsOfTheFileAndNoneStaysNone) {
  std::vector<std::int32_t> indices{3, -1, 0, 2, 1, -1};
  to_file_rows(indices, kRows);
  EXPECT_EQ(indices, (std::vector<std::int32_t>{5, -1, 0, 3, 2, -1}));
  std::vector<std::int32_t> same{4, 0, -1};
  to_file_rows(same, {});  // nothing dropped: the identity
  EXPECT_EQ(same, (std::vector<std::int32_t>{4, 0, -1}));
}

TEST(FileRows, PerPointValuesSpreadOverTheFileWithAFill) {
  EXPECT_EQ(spread_to_file_rows({7, 8, 9, 10}, kRows, 6, -1), (std::vector<std::int32_t>{7, -1, 8, 9, -1, 10}));
  EXPECT_EQ(spread_to_file_rows({7, 8}, {}, 2, -1), (std::vector<std::int32_t>{7, 8}));
  EXPECT_THROW(spread_to_file_rows({7, 8, 9, 10}, kRows, 5, -1), InvalidArgument);  // row 5 outside
  EXPECT_THROW(spread_to_file_rows({7, 8, 9}, kRows, 6, -1), InvalidArgument);      // sizes differ
  EXPECT_THROW(spread_to_file_rows({7, 8}, {}, 3, -1), InvalidArgument);
}

TEST(FileRows, AFileRowIsFoundOnlyWhereItWasKept) {
  EXPECT_EQ(computed_row(0, kRows), 0);
  EXPECT_EQ(computed_row(3, kRows), 2);
  EXPECT_EQ(computed_row(5, kRows), 3);
  EXPECT_FALSE(computed_row(1, kRows).has_value());
  EXPECT_FALSE(computed_row(4, kRows).has_value());
  EXPECT_FALSE(computed_row(6, kRows).has_value());
  EXPECT_EQ(computed_row(9, {}), 9);
}

TEST(FileRows, PositionsOfASelectionInItsOrder) {
  const std::vector<float> xyz{0, 1, 2, 10, 11, 12, 20, 21, 22};
  EXPECT_EQ(gather_positions(xyz, {2, 0, 2}), (std::vector<float>{20, 21, 22, 0, 1, 2, 20, 21, 22}));
  EXPECT_TRUE(gather_positions(xyz, {}).empty());
  EXPECT_THROW(gather_positions(xyz, {3}), InvalidArgument);
  EXPECT_THROW(gather_positions(xyz, {-1}), InvalidArgument);
}

TEST(SparseCoordsFromRows, TheBatchSizeIsTheLargestIdPlusOneUnlessGiven) {
  const SparseCoords c = coords_from_rows({0, 1, 2, 3, 4, 0, 0, 0, 2, 5, 5, 5}, {8, 8, 8});
  EXPECT_EQ(c.batch_size, 5);
  EXPECT_EQ(c.count(), 3);
  EXPECT_EQ(c.shape, (std::array<std::int32_t, 3>{8, 8, 8}));
  EXPECT_EQ(coords_from_rows({0, 1, 2, 3}, {8, 8, 8}, 7).batch_size, 7);
}

TEST(SparseCoordsFromRows, WhatTheDataCannotHoldIsADataError) {
  try {
    coords_from_rows({0, 1, 1, 1, -3, 1, 1, 1}, {4, 4, 4});
    FAIL() << "a negative batch id was accepted";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "row 1: negative batch id -3");
  }
  EXPECT_THROW(coords_from_rows({}, {4, 4, 4}), DataError);
  EXPECT_THROW(coords_from_rows({INT32_MAX, 0, 0, 0}, {4, 4, 4}), DataError);
  EXPECT_THROW(coords_from_rows({INT32_MAX, 0, 0, 0}, {4, 4, 4}, 2), DataError);  // checked with a size given too
  EXPECT_THROW(coords_from_rows({0, 1, 2}, {4, 4, 4}), InvalidArgument);          // not rows of four
}

TEST(SparseCoordsOfVoxels, OneBatchInTheGridsShapeAndAGridTooLargeIsADataError) {
  Voxels v;
  v.count = 2;
  v.shape = {3, 5, 7};
  v.coords = {0, 1, 2, 3, 0, 2, 4, 6};
  v.points_per_voxel = {4, 9};
  const SparseCoords c = coords_of(v);
  EXPECT_EQ(c.shape, (std::array<std::int32_t, 3>{3, 5, 7}));
  EXPECT_EQ(c.batch_size, 1);
  EXPECT_EQ(c.coords, v.coords);
  EXPECT_EQ(points_kept(v), 13);
  v.shape[1] = std::int64_t{INT32_MAX} + 1;
  EXPECT_THROW(coords_of(v), DataError);
}

TEST(FpsSamplesForRatio, CeilingOfTheProductWithoutTheDoublesRoundingError) {
  EXPECT_EQ(samples_for_ratio(0.07, 100), 7);  // 0.07 * 100 = 7.000000000000001 in double
  EXPECT_EQ(samples_for_ratio(0.5, 3), 2);
  EXPECT_EQ(samples_for_ratio(0.25, 8), 2);
  EXPECT_EQ(samples_for_ratio(1.0, 5), 5);
  EXPECT_EQ(samples_for_ratio(1e-9, 10), 1);  // at least one
  EXPECT_EQ(samples_for_ratio(0.1, 115384), 11539);
  EXPECT_THROW(samples_for_ratio(0.0, 10), InvalidArgument);
  EXPECT_THROW(samples_for_ratio(1.5, 10), InvalidArgument);
  EXPECT_THROW(samples_for_ratio(0.5, 0), InvalidArgument);
}

TEST(FpsSeededStart, SplitMix64sPublishedOutputsModuloTheCloudSize) {
  // SplitMix64 from state 0: the first outputs are 0xe220a8397b1dcdaf, then 0x6e789e6aa1b965f4 (the state
  // advanced by the golden gamma 0x9e3779b97f4a7c15); the seed plus the item index is the state.
  const std::uint64_t first = 0xe220a8397b1dcdafULL, second = 0x6e789e6aa1b965f4ULL;
  EXPECT_EQ(seeded_start(0, 0, 1000003), static_cast<std::int64_t>(first % 1000003));
  EXPECT_EQ(seeded_start(0, 0x9e3779b97f4a7c15ULL, 97), static_cast<std::int64_t>(second % 97));
  EXPECT_EQ(seeded_start(0x9e3779b97f4a7c15ULL, 0, 97), static_cast<std::int64_t>(second % 97));
  EXPECT_EQ(seeded_start(42, 7, 1), 0);
  EXPECT_THROW(seeded_start(1, 2, 0), InvalidArgument);
}

}  // namespace
}  // namespace s3d::points
