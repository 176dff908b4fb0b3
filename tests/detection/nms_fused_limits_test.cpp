// The fused small-NMS path's box limit per device: only sort variants whose shared memory fits the device's
// opt-in limit may be configured, so a Turing GPU (64 KiB per block) must not get the 16,384-box variant.
#include <gtest/gtest.h>

#include "nms_fused_limits.hpp"

namespace s3d::detection::detail {
namespace {

constexpr int kTuringOptinBytes = 65536;
constexpr int kHopperOptinBytes = 232448;

TEST(NmsFusedLimits, TuringClampsToTheLargestSortThatFits) {
  EXPECT_GT(kFusedSortVariants[2].smem_bytes, kTuringOptinBytes);
  EXPECT_LE(kFusedSortVariants[1].smem_bytes, kTuringOptinBytes);
  EXPECT_EQ(fused_max_boxes_for(kTuringOptinBytes, 16384), 4096);
  EXPECT_EQ(fused_max_boxes_for(kTuringOptinBytes, 10000), 4096);
  EXPECT_EQ(fused_max_boxes_for(kTuringOptinBytes, 4096), 4096);
  EXPECT_EQ(fused_max_boxes_for(kTuringOptinBytes, 1024), 1024);  // the default is unchanged
  EXPECT_EQ(fused_max_boxes_for(kTuringOptinBytes, 0), 0);
}

TEST(NmsFusedLimits, HopperKeepsEveryRequest) {
  EXPECT_EQ(fused_max_boxes_for(kHopperOptinBytes, 16384), 16384);
  EXPECT_EQ(fused_max_boxes_for(kHopperOptinBytes, 5000), 5000);
  EXPECT_EQ(fused_max_boxes_for(kHopperOptinBytes, 1024), 1024);
  EXPECT_EQ(fused_max_boxes_for(kHopperOptinBytes, 0), 0);
}

TEST(NmsFusedLimits, NoVariantFitsMeansNoFusedPath) {
  EXPECT_EQ(fused_max_boxes_for(kFusedSortVariants[0].smem_bytes - 1, 1024), 0);
  EXPECT_EQ(fused_max_boxes_for(kFusedSortVariants[0].smem_bytes, 16384), kFusedSortVariants[0].max_boxes);
}

}  // namespace
}  // namespace s3d::detection::detail
