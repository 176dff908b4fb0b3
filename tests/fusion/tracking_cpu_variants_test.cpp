// The CPU oracle's vectorised loops against the formulations they reorganise: the ICP reduction against the
// kernel's own per-thread sums (icp_thread_sum) and trees, the bilateral filter (range weights shared by the
// two pixels of each pair, rows in blocks per thread; AVX-512, AVX2 and baseline loops) against the kernel's
// bilateral_pixel, and the AVX2 variants of the pre-processing and the reduction against the baseline x86-64 ones
// (S3D_CPU_ISA=baseline), bit for bit on real frames.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#include "s3d/core/cpu_dispatch.hpp"
#include "s3d/core/parallel.hpp"
#include "test_support.hpp"
#include "tracking_common.hpp"
#include "tracking_cpu.hpp"
#include "tracking_fixtures.hpp"
#include "tracking_math.hpp"

namespace s3d::fusion {
namespace {

/// The kernel's reduction written out plainly: per tile, icp_thread_sum for each of the 256 threads, the
/// warp trees and the 8-group tree in float; then the tiles in double, thread j summing tiles j, j + 256, ...
void kernel_tree_reference(const detail::IcpInputs& in, double* out) {
  constexpr int kThreads = detail::kReduceThreads, kTerms = detail::kIcpTerms;
  const int tiles = detail::icp_tiles(in.cur_pixels);
  std::vector<float> tile_sums(static_cast<std::size_t>(kTerms) * tiles);
  for (int t = 0; t < tiles; ++t) {
    std::vector<float> threads(static_cast<std::size_t>(kTerms) * kThreads);
    for (int j = 0; j < kThreads; ++j) {
      float acc[kTerms];
      detail::icp_thread_sum(in, t, j, acc);
      for (int k = 0; k < kTerms; ++k) threads[k * kThreads + j] = acc[k];
    }
    for (int k = 0; k < kTerms; ++k) {
      float groups[8];
      for (int g = 0; g < 8; ++g) groups[g] = detail::warp_tree(threads.data() + k * kThreads + 32 * g);
      tile_sums[static_cast<std::size_t>(k) * tiles + t] = detail::tree8(groups);
    }
  }
  for (int k = 0; k < kTerms; ++k) {
    double partial[kThreads];
    for (int j = 0; j < kThreads; ++j) {
      partial[j] = 0.0;
      for (int t = j; t < tiles; t += kThreads)
        partial[j] += static_cast<double>(tile_sums[std::size_t(k) * tiles + t]);
    }
    double groups[8];
    for (int g = 0; g < 8; ++g) groups[g] = detail::warp_tree(partial + 32 * g);
    out[k] = detail::tree8(groups);
  }
}

/// The top-left w x h of `src` (odd sizes: partly filled tiles and rows of no vector width).
Image<float> crop(const Image<float>& src, int w, int h) {
  Image<float> out(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) out.at(x, y) = src.at(x, y);
  return out;
}

/// Reference = frame 0 at its ground-truth pose; current = frame 8; estimates: its pose, and one moved off.
std::vector<Eigen::Isometry3d> estimates_for_frame8() {
  const Eigen::Isometry3d p8 = test::read_redkitchen_pose(8);
  Eigen::Isometry3d off = p8;
  off.translation() += Eigen::Vector3d(0.02, -0.01, 0.015);
  off.linear() = off.linear() * Eigen::AngleAxisd(0.03, Eigen::Vector3d(0.2, 1, 0.1).normalized()).toRotationMatrix();
  return {p8, off};
}

TEST(TrackingCpuVariants, ReductionEqualsTheKernelsThreadSumsBitForBit) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.depth.png");
  const FusionParams p = test::redkitchen_params();
  const Image<float> f0 = s3d::test::read_redkitchen_depth(0), f8 = s3d::test::read_redkitchen_depth(8);
  const Eigen::Isometry3d p0 = test::read_redkitchen_pose(0);
  for (auto [w, h] : {std::pair{640, 480}, std::pair{333, 251}}) {
    auto ref = detail::make_cpu_tracking(p, w, h);
    auto cur = detail::make_cpu_tracking(p, w, h);
    ref->preprocess(crop(f0, w, h).cview());
    ref->reference_from_frame(test::to_rigid(p0));
    cur->preprocess(crop(f8, w, h).cview());
    for (const Eigen::Isometry3d& estimate : estimates_for_frame8())
      for (const detail::IcpGates& gates : test::icp_gate_variants())
        for (int l = 0; l < p.depth.levels; ++l) {
          const detail::IcpInputs in =
              detail::make_icp_inputs(cur->frame_maps(l), ref->reference_maps(l), test::to_rigid(estimate),
                                      test::to_rigid(p0.inverse()), p.camera.level(l), gates, l);
          double expected[detail::kIcpTerms], got[detail::kIcpTerms];
          kernel_tree_reference(in, expected);
          detail::icp_reduce_cpu(in, got);
          EXPECT_GT(expected[28], 50.0) << w << "x" << h << " level " << l;
          EXPECT_EQ(std::memcmp(expected, got, sizeof got), 0)
              << w << "x" << h << " level " << l << " huber " << gates.huber_delta << " noise weighting "
              << gates.noise_weighting << " model sigma " << gates.model_sigma << ": inliers " << got[28] << " vs "
              << expected[28] << ", A00 " << got[0] << " vs " << expected[0];
        }
  }
}

TEST(TrackingCpuVariants, PhotometricReductionEqualsTheKernelsThreadSumsBitForBit) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.color.jpg");
  FusionParams p = test::redkitchen_params();
  p.icp.photometric_sigma = 0.02f;
  const Image<float> f0 = s3d::test::read_redkitchen_depth(0), f8 = s3d::test::read_redkitchen_depth(8);
  const Eigen::Isometry3d p0 = test::read_redkitchen_pose(0);
  // Both ISAs at the odd size (partly filled tiles), the default one at the full frame: the sanitizer build runs
  // this too.
  for (auto [w, h, isa] :
       {std::tuple<int, int, const char*>{640, 480, nullptr}, {333, 251, nullptr}, {333, 251, "baseline"}}) {
    s3d::test::ScopedCpuIsa scoped(isa);
    auto t = detail::make_cpu_tracking(p, w, h);  // reference: frame 0 and its grey levels; current: frame 8
    t->preprocess(crop(f0, w, h).cview());
    t->preprocess_grey(test::redkitchen_grey(0, w, h).data());
    t->reference_from_frame(test::to_rigid(p0));
    t->keep_reference_grey();
    t->preprocess(crop(f8, w, h).cview());
    t->preprocess_grey(test::redkitchen_grey(8, w, h).data());
    for (const Eigen::Isometry3d& estimate : estimates_for_frame8())
      for (const float weight : test::photometric_weight_variants())
        for (int l = 0; l < p.depth.levels; ++l) {
          detail::IcpGates gates;
          gates.photometric_weight = weight;
          const detail::IcpInputs in =
              detail::make_icp_inputs(t->frame_maps(l), t->reference_maps(l), test::to_rigid(estimate),
                                      test::to_rigid(p0.inverse()), p.camera.level(l), gates, l, t->grey_maps(l));
          ASSERT_EQ(in.photometric_weight, weight);
          double expected[detail::kIcpTerms], got[detail::kIcpTerms];
          kernel_tree_reference(in, expected);
          detail::icp_reduce_cpu(in, got);
          EXPECT_EQ(std::memcmp(expected, got, sizeof got), 0)
              << w << "x" << h << " level " << l << " weight " << weight << " " << (isa ? isa : "avx2") << ": A00 "
              << got[0] << " vs " << expected[0] << ", g3 " << got[24] << " vs " << expected[24];
          if (weight != test::photometric_weight_variants().front()) continue;
          // The term is in the system: it differs from the depth-only one.
          gates.photometric_weight = 0.0f;
          double depth_only[detail::kIcpTerms];
          detail::icp_reduce_cpu(
              detail::make_icp_inputs(t->frame_maps(l), t->reference_maps(l), test::to_rigid(estimate),
                                      test::to_rigid(p0.inverse()), p.camera.level(l), gates, l, t->grey_maps(l)),
              depth_only);
          EXPECT_NE(depth_only[0], got[0]) << "level " << l;
          EXPECT_EQ(depth_only[28], got[28]) << "the inlier count stays geometric";
        }
  }
}

TEST(TrackingCpuVariants, BilateralEqualsThePerPixelFilterBitForBit) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.depth.png");
  const Image<float> real = s3d::test::read_redkitchen_depth(8);
  const int threads_before = cpu_threads();
  long long compared = 0;
  for (auto [w, h] : {std::pair{640, 480}, std::pair{333, 251}, std::pair{13, 7}, std::pair{1, 1}, std::pair{5, 40}})
    for (int radius : {6, 3, 1, 0, 16}) {
      if (radius == 16 && w * h > 100000) continue;  // the per-pixel reference alone would take seconds
      const Image<float> depth = crop(real, w, h);
      const std::vector<float> space = detail::bilateral_space_table(radius, 4.5f);
      const float inv = detail::inv_two_sigma2(0.03f);
      std::vector<float> want(static_cast<std::size_t>(w) * h);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          want[static_cast<std::size_t>(y) * w + x] =
              detail::bilateral_pixel(depth.data.data(), w, h, x, y, radius, space.data(), inv);
      for (int threads : {1, 2, 3, 7})  // blocks of rows: each starts its ring again; more threads than rows
        for (const char* isa : {static_cast<const char*>(nullptr), "avx2", "baseline"}) {
          std::vector<float> got(want.size(), -1.0f);
          {
            s3d::test::ScopedCpuIsa scoped(isa);
            set_cpu_threads(threads);
            detail::bilateral_cpu(depth.data.data(), w, h, radius, space.data(), inv, got.data());
          }
          ASSERT_EQ(test::first_difference(got, want), -1)
              << w << "x" << h << " radius " << radius << ", " << threads << " threads, " << (isa ? isa : "widest ISA");
          compared += static_cast<long long>(got.size());
        }
    }
  set_cpu_threads(threads_before);
  EXPECT_GT(compared, 4 * 640 * 480);
}

TEST(TrackingCpuVariants, Avx2AndBaselineLoopsGiveTheSameBits) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2: only the baseline loops run here";
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.depth.png");
  const FusionParams p = test::redkitchen_params();
  const Eigen::Isometry3d p0 = test::read_redkitchen_pose(0);
  for (auto [w, h] : {std::pair{640, 480}, std::pair{333, 251}}) {
    const Image<float> f0 = crop(s3d::test::read_redkitchen_depth(0), w, h);
    const Image<float> f8 = crop(s3d::test::read_redkitchen_depth(8), w, h);
    struct Run {
      std::vector<std::vector<float>> depth;
      std::vector<detail::HostMaps> maps;
      std::vector<detail::IcpSystem> systems;
    };
    auto run = [&](const char* isa) {
      s3d::test::ScopedCpuIsa scoped(isa);
      EXPECT_EQ(cpu_avx2_enabled(), isa == nullptr);
      Run r;
      auto cur = detail::make_cpu_tracking(p, w, h);  // reference: frame 0; current: frame 8
      cur->preprocess(f0.cview());
      cur->reference_from_frame(test::to_rigid(p0));
      cur->preprocess(f8.cview());
      for (int l = 0; l < p.depth.levels; ++l) {
        r.depth.push_back(cur->download_filtered_depth(l));
        r.maps.push_back(cur->download_frame_maps(l));
        for (const Eigen::Isometry3d& e : estimates_for_frame8())
          r.systems.push_back(cur->build_system(l, test::to_rigid(e), test::to_rigid(p0.inverse()), p.camera.level(l),
                                                detail::IcpGates{}));
      }
      return r;
    };
    const Run avx2 = run(nullptr), baseline = run("baseline");
    for (int l = 0; l < p.depth.levels; ++l) {
      EXPECT_EQ(test::first_difference(avx2.depth[l], baseline.depth[l]), -1) << w << "x" << h << " level " << l;
      EXPECT_EQ(test::first_difference(avx2.maps[l].vertices, baseline.maps[l].vertices), -1) << "level " << l;
      EXPECT_EQ(test::first_difference(avx2.maps[l].normals, baseline.maps[l].normals), -1) << "level " << l;
    }
    for (std::size_t i = 0; i < avx2.systems.size(); ++i) {
      EXPECT_GT(avx2.systems[i].inliers, 50) << "system " << i;
      EXPECT_TRUE(test::same_system(avx2.systems[i], baseline.systems[i])) << w << "x" << h << " system " << i;
    }
  }
}

}  // namespace
}  // namespace s3d::fusion
