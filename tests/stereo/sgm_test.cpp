// s3d::stereo tests: every stage against a naive reference (CPU and CUDA), CUDA == CPU bit for bit per
// stage and end to end on odd sizes, each option, D = 16/100/256/512, negative minimum disparity,
// parameter validation and degenerate sizes. Per-device suites (label gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/stages.hpp"
#include "stereo_test_util.hpp"
#include "test_support.hpp"

namespace s3d::stereo {
namespace {

using test::Image;
using test::random_image;

const Device kCpu{Device::Kind::kCpu};

// ---------------------------------------------------------------- naive references (independent code)
template <typename T>
std::vector<std::uint64_t> naive_census(const Image<T>& im, CensusKind kind, int ww, int wh) {
  auto at = [&](int x, int y) {
    x = std::min(std::max(x, 0), im.width - 1);
    y = std::min(std::max(y, 0), im.height - 1);
    return im.pixels[static_cast<std::size_t>(y) * im.width + x];
  };
  std::vector<std::uint64_t> out(im.pixels.size());
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x) {
      std::uint64_t code = 0;
      std::vector<std::pair<int, int>> win;
      for (int dy = -(wh / 2); dy <= wh / 2; ++dy)
        for (int dx = -(ww / 2); dx <= ww / 2; ++dx) win.emplace_back(dx, dy);
      if (kind == CensusKind::kFull) {
        for (auto [dx, dy] : win)
          if (dx || dy) code = (code << 1) | (at(x + dx, y + dy) < at(x, y) ? 1u : 0u);
      } else {
        const int n = static_cast<int>(win.size());
        for (int i = 0; i < n / 2; ++i) {
          auto [ax, ay] = win[i];
          auto [bx, by] = win[n - 1 - i];
          code = (code << 1) | (at(x + ax, y + ay) < at(x + bx, y + by) ? 1u : 0u);
        }
      }
      out[static_cast<std::size_t>(y) * im.width + x] = code;
    }
  return out;
}

std::vector<std::uint16_t> naive_aggregate(const std::vector<std::uint64_t>& cl, const std::vector<std::uint64_t>& cr,
                                           int W, int H, const SgmParams& p, bool right_view) {
  const int D = p.disparities;
  const auto& ref = right_view ? cr : cl;
  const auto& tgt = right_view ? cl : cr;
  auto cost = [&](int x, int y, int d) {
    const int xt = right_view ? x + p.min_disparity + d : x - p.min_disparity - d;
    if (xt < 0 || xt >= W) return p.census_bits();
    return __builtin_popcountll(ref[y * W + x] ^ tgt[y * W + xt]);
  };
  std::vector<int> sum(static_cast<std::size_t>(W) * H * D, 0);
  const int dirs[8][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, 1}, {-1, 1}, {1, -1}, {-1, -1}};
  std::vector<int> L(static_cast<std::size_t>(W) * H * D);
  for (int r = 0; r < p.paths; ++r) {
    const int dx = dirs[r][0], dy = dirs[r][1];
    for (int yi = 0; yi < H; ++yi) {
      const int y = dy >= 0 ? yi : H - 1 - yi;
      for (int xi = 0; xi < W; ++xi) {
        const int x = dx >= 0 ? xi : W - 1 - xi;
        const int px = x - dx, py = y - dy;
        int* cur = &L[(static_cast<std::size_t>(y) * W + x) * D];
        if (px < 0 || px >= W || py < 0 || py >= H) {
          for (int d = 0; d < D; ++d) cur[d] = cost(x, y, d);
        } else {
          const int* prev = &L[(static_cast<std::size_t>(py) * W + px) * D];
          const int m = *std::min_element(prev, prev + D);
          for (int d = 0; d < D; ++d) {
            int best = prev[d];
            if (d > 0) best = std::min(best, prev[d - 1] + p.p1);
            if (d < D - 1) best = std::min(best, prev[d + 1] + p.p1);
            best = std::min(best, m + p.p2);
            cur[d] = cost(x, y, d) + best - m;
          }
        }
        for (int d = 0; d < D; ++d) sum[(static_cast<std::size_t>(y) * W + x) * D + d] += cur[d];
      }
    }
  }
  std::vector<std::uint16_t> out(sum.size());
  for (std::size_t i = 0; i < sum.size(); ++i) {
    EXPECT_LE(sum[i], 65535);
    out[i] = static_cast<std::uint16_t>(sum[i]);
  }
  return out;
}

// ---------------------------------------------------------------- parameters
// One meaning of "invalid" across the library: the core's is_valid (every non-finite value).
TEST(Disparity, ValidMeansFinite) {
  EXPECT_FALSE(is_valid_disparity(kInvalidDisparity));
  EXPECT_FALSE(is_valid_disparity(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_FALSE(is_valid_disparity(-std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(is_valid_disparity(0.0f));
  EXPECT_TRUE(is_valid_disparity(-3.5f));
  EXPECT_TRUE(is_valid_disparity(std::numeric_limits<float>::max()));
}

// With one GPU the engine and the caller share device 0 and this only checks that nothing throws; with two,
// the engine on cuda:0 must leave a caller on cuda:1 there.
TEST(SgmEngineCuda, LeavesTheCallersCurrentDeviceAsItFoundIt) {
  const int count = cuda_device_count();
  if (count == 0) GTEST_SKIP() << "no CUDA device";
  const ScopedDevice callers(count - 1);
  const auto l = test::random_image<std::uint8_t>(64, 48, 3), r = test::random_image<std::uint8_t>(64, 48, 4);
  SgmParams p;
  p.disparities = 16;
  {
    SgmEngine engine(Device(Device::Kind::kCuda, 0), p, 64, 48);
    EXPECT_EQ(current_cuda_device(), count - 1);
    engine.compute(l.view(), r.view());
    EXPECT_EQ(current_cuda_device(), count - 1);
  }
  EXPECT_EQ(current_cuda_device(), count - 1);
}

TEST(SgmParams, DefaultsAreValid) {
  SgmParams p;
  EXPECT_NO_THROW(p.validate());
  EXPECT_NO_THROW(p.validate(631, 479));
  EXPECT_EQ(p.census_bits(), 62);
  p.census = CensusKind::kCenterSymmetric;
  EXPECT_EQ(p.census_bits(), 31);
}

void expect_invalid(const SgmParams& p, const std::string& field, int w = 640, int h = 480) {
  try {
    p.validate(w, h);
    ADD_FAILURE() << "expected InvalidArgument naming " << field;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(SgmParams, ValidateNamesTheBadField) {
  SgmParams p;
  p.p2 = p.p1;
  expect_invalid(p, "p2");
  p = {};
  p.p1 = -1;
  expect_invalid(p, "p1");
  p = {};
  p.p2 = 9000;  // 8 * (62 + 9000) > 65535
  expect_invalid(p, "overflows");
  p.paths = 4;  // 4 * (62 + 9000) = 36248 fits
  EXPECT_NO_THROW(p.validate(640, 480));
  p = {};
  p.paths = 6;
  expect_invalid(p, "paths");
  p = {};
  p.disparities = 8;
  expect_invalid(p, "disparities");
  p = {};
  p.disparities = 512;
  expect_invalid(p, "too large for the image width", 500, 400);
  p = {};
  p.min_disparity = 700;
  expect_invalid(p, "min_disparity");
  p = {};
  p.uniqueness = 100;
  expect_invalid(p, "uniqueness");
  p = {};
  p.census_width = 8;
  expect_invalid(p, "census_width");
  p = {};
  p.census_height = 9;
  expect_invalid(p, "census_height");
  p = {};
  p.lr_max_diff = -1.0f;
  expect_invalid(p, "lr_max_diff");
  p = {};
  p.speckle_range = NAN;
  expect_invalid(p, "speckle_range");
  p = {};
  p.speckle_size = -3;
  expect_invalid(p, "speckle_size");
  p = {};
  expect_invalid(p, "too large", 10000, 10000);  // > 2^26 pixels
}

TEST(SgmParams, ParseCensus) {
  CensusKind k;
  int w, h;
  parse_census("9x7", k, w, h);
  EXPECT_EQ(k, CensusKind::kFull);
  EXPECT_EQ(w, 9);
  EXPECT_EQ(h, 7);
  parse_census("cs9x7", k, w, h);
  EXPECT_EQ(k, CensusKind::kCenterSymmetric);
  parse_census("5x3", k, w, h);
  EXPECT_EQ(w, 5);
  EXPECT_EQ(h, 3);
  for (const char* bad : {"", "9", "x7", "8x7", "9x8", "11x7", "9x7x", "cs", "abc", "9x"})
    EXPECT_THROW(parse_census(bad, k, w, h), InvalidArgument) << bad;
}

TEST(SgmParams, DegenerateSizesRejected) {
  SgmParams p;
  p.disparities = 16;
  Image<std::uint8_t> a = random_image<std::uint8_t>(1, 100, 1);
  EXPECT_THROW(SgmEngine(kCpu, p, 1, 100), InvalidArgument);
  EXPECT_THROW(compute_sgm(kCpu, p, a.view(), a.view()), InvalidArgument);
  EXPECT_THROW(SgmEngine(kCpu, p, 100, 1), InvalidArgument);
  EXPECT_THROW(SgmEngine(kCpu, p, 0, 0), InvalidArgument);
  EXPECT_THROW(SgmEngine(kCpu, p, 8, 5), InvalidArgument);  // narrower than D
  EXPECT_NO_THROW(SgmEngine(kCpu, p, 16, 7));               // smallest legal
}

// ---------------------------------------------------------------- per-device stage tests
class SgmDevice : public ::testing::TestWithParam<Device> {};

TEST_P(SgmDevice, CensusMatchesReference) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int width = test::kSanitized ? 211 : 631, height = test::kSanitized ? 157 : 479;
  const Image<std::uint8_t> im8 = random_image<std::uint8_t>(width, height, 11);
  const Image<std::uint16_t> im16 = random_image<std::uint16_t>(width, height, 12, 65535);
  struct W {
    CensusKind kind;
    int w, h;
  };
  for (W win : {W{CensusKind::kFull, 9, 7}, W{CensusKind::kCenterSymmetric, 9, 7}, W{CensusKind::kFull, 5, 5},
                W{CensusKind::kCenterSymmetric, 7, 3}, W{CensusKind::kFull, 3, 1}, W{CensusKind::kFull, 1, 7}}) {
    SCOPED_TRACE(std::to_string(win.w) + "x" + std::to_string(win.h));
    EXPECT_EQ(stages::census(GetParam(), im8.view(), win.kind, win.w, win.h),
              naive_census(im8, win.kind, win.w, win.h));
    EXPECT_EQ(stages::census(GetParam(), im16.view(), win.kind, win.w, win.h),
              naive_census(im16, win.kind, win.w, win.h));
  }
}

TEST_P(SgmDevice, AggregateMatchesReference) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int W = 67, H = 41;
  const Image<std::uint8_t> l = random_image<std::uint8_t>(W, H, 21), r = random_image<std::uint8_t>(W, H, 22);
  const auto cl = naive_census(l, CensusKind::kFull, 9, 7), cr = naive_census(r, CensusKind::kFull, 9, 7);
  for (int paths : {4, 8})
    for (int D : {16, 24, 40})
      for (int min_d : {0, -5, 7})
        for (bool right : {false, true}) {
          SgmParams p;
          p.paths = paths;
          p.disparities = D;
          p.min_disparity = min_d;
          p.p1 = 7;
          p.p2 = 90;
          SCOPED_TRACE("paths " + std::to_string(paths) + " D " + std::to_string(D) + " min " + std::to_string(min_d) +
                       (right ? " right" : " left"));
          const auto got =
              stages::aggregate(GetParam(), cl, cr, W, H, p, right ? stages::View::kRight : stages::View::kLeft);
          ASSERT_EQ(got, naive_aggregate(cl, cr, W, H, p, right));
        }
}

TEST_P(SgmDevice, AggregateMatchesCpuLarge) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  const int W = 631, H = 479;
  const Image<std::uint8_t> l = random_image<std::uint8_t>(W, H, 31), r = random_image<std::uint8_t>(W, H, 32);
  const auto cl = stages::census(kCpu, l.view(), CensusKind::kFull, 9, 7);
  const auto cr = stages::census(kCpu, r.view(), CensusKind::kFull, 9, 7);
  for (int D : {100, 512}) {
    SgmParams p;
    p.disparities = D;
    p.min_disparity = D == 100 ? -13 : 0;
    const auto ref = stages::aggregate(kCpu, cl, cr, W, H, p, stages::View::kLeft);
    const auto got = stages::aggregate(GetParam(), cl, cr, W, H, p, stages::View::kLeft);
    EXPECT_TRUE(ref == got) << "D " << D;
  }
}

TEST_P(SgmDevice, WtaMatchesReference) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int W = 131, H = 37, D = 100;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> dist(0, 2000);
  std::vector<std::uint16_t> vol(static_cast<std::size_t>(W) * H * D);
  for (auto& v : vol) v = static_cast<std::uint16_t>(dist(rng));
  for (int i = 0; i < W * H; i += 3) vol[static_cast<std::size_t>(i) * D + (i % D)] = 0;  // clear winners, some ties
  for (int u : {0, 10})
    for (bool sub : {false, true}) {
      SgmParams p;
      p.disparities = D;
      p.min_disparity = -20;
      p.uniqueness = u;
      p.subpixel = sub;
      std::vector<float> disp, conf;
      stages::wta(GetParam(), vol, W, H, p, stages::View::kLeft, disp, &conf);
      ASSERT_EQ(disp.size(), vol.size() / D);
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          const std::uint16_t* s = &vol[(static_cast<std::size_t>(y) * W + x) * D];
          const int best = static_cast<int>(std::min_element(s, s + D) - s);
          int second = INT_MAX;
          for (int d = 0; d < D; ++d)
            if (std::abs(d - best) > 1) second = std::min<int>(second, s[d]);
          const bool inside = x - (best - 20) >= 0 && x - (best - 20) < W;
          const bool unique = u == 0 || static_cast<long long>(second) * (100 - u) >= s[best] * 100LL;
          const float got = disp[y * W + x];
          if (!inside || !unique) {
            EXPECT_EQ(got, kInvalidDisparity) << x << "," << y;
            EXPECT_EQ(conf[y * W + x], 0.0f);
            continue;
          }
          float want = static_cast<float>(best - 20);
          if (sub && best > 0 && best < D - 1) {
            const int den = std::max(s[best - 1] + s[best + 1] - 2 * s[best], 1);
            want += static_cast<float>(s[best - 1] - s[best + 1]) / static_cast<float>(2 * den);
          }
          ASSERT_EQ(got, want) << x << "," << y;
          EXPECT_FLOAT_EQ(conf[y * W + x], second > 0 ? static_cast<float>(second - s[best]) / second : 0.0f);
        }
    }
}

std::vector<float> random_disparity(int W, int H, std::uint32_t seed, float invalid_fraction) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> d(static_cast<std::size_t>(W) * H);
  // piecewise-smooth blobs plus noise, so regions of all sizes exist
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      float v = 20.0f + 10.0f * std::sin(x * 0.05f) + ((x / 17 + y / 13) % 3) * 7.0f;
      if (u(rng) < 0.1f) v += u(rng) * 30.0f;
      d[y * W + x] = u(rng) < invalid_fraction ? kInvalidDisparity : std::round(v * 4.0f) / 4.0f;
    }
  return d;
}

TEST_P(SgmDevice, PostFiltersMatchCpu) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  const int W = 631, H = 479;
  const auto left = random_disparity(W, H, 41, 0.1f), right = random_disparity(W, H, 42, 0.1f);
  std::string where;
  EXPECT_TRUE(test::bit_equal(stages::lr_check(GetParam(), left, right, W, H, 1.0f),
                              stages::lr_check(kCpu, left, right, W, H, 1.0f), W, &where))
      << where;
  EXPECT_TRUE(
      test::bit_equal(stages::median3x3(GetParam(), left, W, H), stages::median3x3(kCpu, left, W, H), W, &where))
      << where;
  for (int size : {0, 5, 100, 4000}) {
    const auto got = stages::speckle(GetParam(), left, W, H, size, 1.0f);
    EXPECT_TRUE(test::bit_equal(got, stages::speckle(kCpu, left, W, H, size, 1.0f), W, &where)) << size << " " << where;
  }
}

// Occlusion fill reference, written independently of fill_math.hpp: for each invalid pixel, search the
// nearest valid pixel to the left and to the right in the ORIGINAL row; when both exist and the invalid gap
// between them is at most |left - right| + 2 pixels wide, the pixel takes the smaller of the two.
std::vector<float> naive_fill(const std::vector<float>& in, int W, int H) {
  std::vector<float> out = in;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      if (is_valid_disparity(in[y * W + x])) continue;
      int l = x - 1, r = x + 1;
      while (l >= 0 && !is_valid_disparity(in[y * W + l])) --l;
      while (r < W && !is_valid_disparity(in[y * W + r])) ++r;
      if (l < 0 || r >= W) continue;
      const float dl = in[y * W + l], dr = in[y * W + r];
      if (static_cast<float>(r - l - 1) <= std::fabs(dl - dr) + 2.0f) out[y * W + x] = std::min(dl, dr);
    }
  return out;
}

TEST_P(SgmDevice, FillOcclusionsMatchesReference) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  struct Size {
    int w, h;
  };
  int filled_total = 0, invalid_left = 0;
  std::uint32_t seed = 500;
  const Size large = test::kSanitized ? Size{211, 157} : Size{631, 479};
  for (const Size sz : {Size{1, 1}, Size{1, 7}, Size{7, 1}, Size{2, 3}, Size{3, 2}, Size{33, 17}, large}) {
    for (float invalid : {0.0f, 0.3f, 0.8f, 0.97f, 1.0f}) {
      const int W = sz.w, H = sz.h;
      auto d = random_disparity(W, H, ++seed, invalid);
      // some rows all invalid, some with a single valid pixel at either end, some negative disparities
      for (int y = 0; y < H; y += 5)
        for (int x = 0; x < W; ++x) d[y * W + x] = kInvalidDisparity;
      if (H > 1 && W > 1) {
        for (int x = 0; x < W; ++x) d[1 * W + x] = x == W - 1 ? -3.25f : kInvalidDisparity;
      }
      if (H > 2 && W > 1) {
        for (int x = 0; x < W; ++x) d[2 * W + x] = x == 0 ? 7.5f : kInvalidDisparity;
      }
      if (H > 3 && W > 2) {  // negative disparities on both sides of short gaps
        for (int x = 0; x < W; ++x) d[3 * W + x] = x % 3 == 1 ? kInvalidDisparity : -1.5f - (x % 7);
      }
      const auto want = naive_fill(d, W, H);
      const auto got = stages::fill_occlusions(GetParam(), d, W, H);
      std::string where;
      ASSERT_TRUE(test::bit_equal(got, want, W, &where)) << W << "x" << H << " invalid " << invalid << " " << where;
      for (std::size_t i = 0; i < d.size(); ++i) {
        filled_total += !is_valid_disparity(d[i]) && is_valid_disparity(got[i]);
        invalid_left += !is_valid_disparity(got[i]);
      }
      if (GetParam().is_cuda()) {
        ASSERT_TRUE(test::bit_equal(got, stages::fill_occlusions(kCpu, d, W, H), W, &where)) << where;
      }
    }
  }
  const int sixth = large.w * large.h / 6;
  EXPECT_GT(filled_total, sixth);  // the cases do exercise the fill...
  EXPECT_GT(invalid_left, sixth);  // ...and the runs it leaves (too wide, at a row's end, rows with nothing)
  EXPECT_THROW(stages::fill_occlusions(GetParam(), std::vector<float>(5), 2, 3), InvalidArgument);
  EXPECT_THROW(stages::fill_occlusions(GetParam(), {}, 0, 0), InvalidArgument);
}

TEST_P(SgmDevice, FillOcclusionsOnHandMadeRows) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const float I = kInvalidDisparity;
  // row 0: a run at the start and at the end stay; [3,5) (2 <= |5-9| + 2) and [7] take the smaller neighbour
  // row 1: nothing to fill from
  // row 2: the width limit |l - r| + 2 exactly: 2 wide between equal values filled, 3 wide not; 6 wide across
  //        a step of 4 filled, 7 wide not; 3 wide across a step of 1.25 filled (3 <= 3.25)
  const std::vector<std::vector<float>> in = {{I, I, 5.0f, I, I, 9.0f, 8.0f, I, 2.0f, 3.0f, I, I},
                                              {I, I, I, I, I, I, I, I, I, I, I, I},
                                              {1.0f, I,    I, 1.0f, I, I, I, 1.0f, 4.0f, I,    I,    I, I, I, I,
                                               0.0f, 4.0f, I, I,    I, I, I, I,    I,    0.0f, 2.5f, I, I, I, 1.25f}};
  const std::vector<std::vector<float>> want = {
      {I, I, 5.0f, 5.0f, 5.0f, 9.0f, 8.0f, 2.0f, 2.0f, 3.0f, I, I},
      {I, I, I, I, I, I, I, I, I, I, I, I},
      {1.0f, 1.0f, 1.0f, 1.0f, I, I, I, 1.0f, 4.0f, 0.0f, 0.0f, 0.0f,  0.0f,  0.0f,  0.0f,
       0.0f, 4.0f, I,    I,    I, I, I, I,    I,    0.0f, 2.5f, 1.25f, 1.25f, 1.25f, 1.25f}};
  for (std::size_t r = 0; r < in.size(); ++r) {
    const int W = static_cast<int>(in[r].size());
    std::string where;
    EXPECT_TRUE(test::bit_equal(stages::fill_occlusions(GetParam(), in[r], W, 1), want[r], W, &where))
        << "row " << r << " " << where;
    EXPECT_TRUE(test::bit_equal(naive_fill(in[r], W, 1), want[r], W, &where)) << "reference, row " << r << " " << where;
  }
}

TEST_P(SgmDevice, SpeckleMedianLrOnHandMadeMaps) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int W = 20, H = 10;
  std::vector<float> d(W * H, 10.0f);
  for (int y = 2; y < 4; ++y)
    for (int x = 2; x < 4; ++x) d[y * W + x] = 30.0f;  // 4-pixel speckle
  d[8 * W + 15] = 10.5f;                               // within range of its neighbours: same region
  d[5 * W + 10] = kInvalidDisparity;
  auto s = stages::speckle(GetParam(), d, W, H, 4, 1.0f);
  EXPECT_EQ(s[2 * W + 2], kInvalidDisparity);
  EXPECT_EQ(s[3 * W + 3], kInvalidDisparity);
  EXPECT_EQ(s[8 * W + 15], 10.5f);
  EXPECT_EQ(s[0], 10.0f);
  s = stages::speckle(GetParam(), d, W, H, 3, 1.0f);  // 4 > 3: kept
  EXPECT_EQ(s[2 * W + 2], 30.0f);

  std::vector<float> m(W * H, 5.0f);
  m[4 * W + 4] = 50.0f;              // outlier removed by the median
  m[6 * W + 6] = kInvalidDisparity;  // invalid stays invalid
  const auto med = stages::median3x3(GetParam(), m, W, H);
  EXPECT_EQ(med[4 * W + 4], 5.0f);
  EXPECT_EQ(med[6 * W + 6], kInvalidDisparity);

  std::vector<float> l(W * H, 3.0f), r(W * H, 3.0f);
  r[5 * W + 7] = 6.0f;  // the right view disagrees at xr = 7 <=> left x = 10
  const auto lr = stages::lr_check(GetParam(), l, r, W, H, 1.0f);
  EXPECT_EQ(lr[5 * W + 10], kInvalidDisparity);
  EXPECT_EQ(lr[5 * W + 11], 3.0f);
  EXPECT_EQ(lr[5 * W + 1], kInvalidDisparity);  // x - d < 0: no right pixel
}

// ---------------------------------------------------------------- end to end
struct Config {
  std::string name;
  SgmParams params;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  auto add = [&](std::string name, auto f) {
    SgmParams p;
    p.disparities = 64;
    p.confidence = true;
    f(p);
    c.push_back({std::move(name), p});
  };
  add("default", [](SgmParams&) {});
  add("paths4", [](SgmParams& p) { p.paths = 4; });
  add("cs9x7", [](SgmParams& p) { p.census = CensusKind::kCenterSymmetric; });
  add("census5x3", [](SgmParams& p) {
    p.census_width = 5;
    p.census_height = 3;
  });
  add("no_subpixel", [](SgmParams& p) { p.subpixel = false; });
  add("no_lr", [](SgmParams& p) { p.lr_check = false; });
  add("no_median", [](SgmParams& p) { p.median = false; });
  add("no_speckle", [](SgmParams& p) { p.speckle_size = 0; });
  add("no_fill", [](SgmParams& p) { p.fill = false; });
  add("fill_uniq20", [](SgmParams& p) {
    p.fill = true;
    p.uniqueness = 20;
    p.median = false;
  });
  add("no_fill_uniq8", [](SgmParams& p) {
    p.fill = false;
    p.uniqueness = 8;
  });
  add("uniq15_lr0", [](SgmParams& p) {
    p.uniqueness = 15;
    p.lr_max_diff = 0.0f;
    p.subpixel = false;
  });
  add("bare", [](SgmParams& p) {
    p.uniqueness = 0;
    p.subpixel = false;
    p.lr_check = false;
    p.median = false;
    p.speckle_size = 0;
    p.confidence = false;
  });
  add("D16", [](SgmParams& p) { p.disparities = 16; });
  add("D100_min-20", [](SgmParams& p) {
    p.disparities = 100;
    p.min_disparity = -20;
  });
  add("D256", [](SgmParams& p) { p.disparities = 256; });
  add("D512", [](SgmParams& p) {
    p.disparities = 512;
    p.paths = 4;
  });
  add("min-40", [](SgmParams& p) { p.min_disparity = -40; });
  add("min+9", [](SgmParams& p) { p.min_disparity = 9; });
  // the LR check's right view from the left volume: the per-path WTA's folded keys (every lane group width),
  // and the fallback volumes (path costs beyond a byte: p2 250)
  add("lr_volume", [](SgmParams& p) { p.lr_method = LrMethod::kVolume; });
  add("lr_volume_D100_min-20", [](SgmParams& p) {
    p.lr_method = LrMethod::kVolume;
    p.disparities = 100;
    p.min_disparity = -20;
  });
  add("lr_volume_D16_min+9", [](SgmParams& p) {
    p.lr_method = LrMethod::kVolume;
    p.disparities = 16;
    p.min_disparity = 9;
  });
  add("lr_volume_D512", [](SgmParams& p) {
    p.lr_method = LrMethod::kVolume;
    p.disparities = 512;
    p.paths = 4;
  });
  add("lr_volume_fallback", [](SgmParams& p) {
    p.lr_method = LrMethod::kVolume;
    p.p2 = 250;
    p.uniqueness = 5;
  });
  return c;
}

TEST_P(SgmDevice, ShiftedPairRecoversDisparityAndCudaMatchesCpu) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  // Wider than the largest D of configs() (512) in either build.
  const int W = test::kSanitized ? 521 : 631, H = test::kSanitized ? 97 : 479;
  for (const Config& cfg : configs()) {
    SCOPED_TRACE(cfg.name);
    const SgmParams& p = cfg.params;
    const int truth = p.min_disparity + std::min(p.disparities - 3, 13);
    Image<std::uint8_t> l, r;
    test::shifted_pair(W, H, truth, 77, l, r);
    SgmEngine engine(GetParam(), p, W, H);
    const SgmResult got = engine.compute(l.view(), r.view());
    ASSERT_EQ(got.disparity.size(), static_cast<std::size_t>(W) * H);
    EXPECT_EQ(got.confidence.size(), p.confidence ? got.disparity.size() : 0u);
    int good = 0, total = 0;
    for (int y = 5; y < H - 5; ++y)
      for (int x = std::max(truth, 0) + 10; x < W - 10 + std::min(truth, 0); ++x) {
        ++total;
        good += std::abs(got.disparity[y * W + x] - truth) <= 0.5f;
      }
    EXPECT_GT(good, 0.95 * total) << good << "/" << total;
    if (GetParam().is_cuda()) {
      const SgmResult ref = compute_sgm(kCpu, p, l.view(), r.view());
      std::string where;
      EXPECT_TRUE(test::bit_equal(got.disparity, ref.disparity, W, &where)) << where;
      EXPECT_TRUE(test::bit_equal(got.confidence, ref.confidence, W, &where)) << where;
      // and on unrelated random images (no true match: exercises uniqueness, LR and speckle heavily)
      const Image<std::uint8_t> a = random_image<std::uint8_t>(W, H, 91), b = random_image<std::uint8_t>(W, H, 92);
      EXPECT_TRUE(test::bit_equal(engine.compute(a.view(), b.view()).disparity,
                                  compute_sgm(kCpu, p, a.view(), b.view()).disparity, W, &where))
          << where;
    }
  }
}

TEST_P(SgmDevice, SixteenBitInput) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int W = 333, H = 121;
  Image<std::uint8_t> l8, r8;
  test::shifted_pair(W, H, 9, 3, l8, r8);
  Image<std::uint16_t> l{W, H, {}}, r{W, H, {}};
  for (auto v : l8.pixels) l.pixels.push_back(static_cast<std::uint16_t>(v * 256 + 3));
  for (auto v : r8.pixels) r.pixels.push_back(static_cast<std::uint16_t>(v * 256 + 3));
  SgmParams p;
  p.disparities = 32;
  const SgmResult a = compute_sgm(GetParam(), p, l.view(), r.view());
  const SgmResult b = compute_sgm(GetParam(), p, l8.view(), r8.view());
  std::string where;
  // a monotonic rescale keeps every census comparison: identical output
  EXPECT_TRUE(test::bit_equal(a.disparity, b.disparity, W, &where)) << where;
  if (GetParam().is_cuda()) {
    EXPECT_TRUE(test::bit_equal(a.disparity, compute_sgm(kCpu, p, l.view(), r.view()).disparity, W, &where)) << where;
  }
}

TEST_P(SgmDevice, BlackPixelsAreMatchedNotMasked) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int W = 200, H = 60;
  Image<std::uint8_t> l, r;
  test::shifted_pair(W, H, 6, 8, l, r);
  for (auto* im : {&l, &r})
    for (auto& v : im->pixels) v = v < 128 ? 0 : v;  // half the pixels black
  SgmParams p;
  p.disparities = 16;
  const SgmResult res = compute_sgm(GetParam(), p, l.view(), r.view());
  int good = 0;
  for (int y = 5; y < H - 5; ++y)
    for (int x = 20; x < W - 5; ++x)
      good += res.disparity[y * W + x] == 6.0f || std::abs(res.disparity[y * W + x] - 6) < 0.5f;
  EXPECT_GT(good, 0.9 * (H - 10) * (W - 25));
}

TEST_P(SgmDevice, EngineReuseAndSizeErrors) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int W = 160, H = 90;
  SgmParams p;
  p.disparities = 32;
  SgmEngine engine(GetParam(), p, W, H);
  Image<std::uint8_t> l, r, l2, r2;
  test::shifted_pair(W, H, 5, 1, l, r);
  test::shifted_pair(W, H, 11, 2, l2, r2);
  const SgmResult a = engine.compute(l.view(), r.view());
  const SgmResult b = engine.compute(l2.view(), r2.view());
  const SgmResult c = engine.compute(l.view(), r.view());
  std::string where;
  EXPECT_TRUE(test::bit_equal(a.disparity, c.disparity, W, &where)) << where;
  EXPECT_FALSE(test::bit_equal(a.disparity, b.disparity, W, nullptr));
  const Image<std::uint8_t> small = random_image<std::uint8_t>(W - 1, H, 3);
  EXPECT_THROW(engine.compute(small.view(), small.view()), InvalidArgument);
  EXPECT_THROW(engine.compute(l.view(), small.view()), InvalidArgument);
  // pitched input gives the same result
  Image<std::uint8_t> wide{W + 7, H, std::vector<std::uint8_t>(static_cast<std::size_t>(W + 7) * H)};
  Image<std::uint8_t> wide_r = wide;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      wide.pixels[y * (W + 7) + x] = l.pixels[y * W + x];
      wide_r.pixels[y * (W + 7) + x] = r.pixels[y * W + x];
    }
  const SgmResult d = engine.compute(ImageView<const std::uint8_t>{wide.pixels.data(), W, H, W + 7},
                                     ImageView<const std::uint8_t>{wide_r.pixels.data(), W, H, W + 7});
  EXPECT_TRUE(test::bit_equal(a.disparity, d.disparity, W, &where)) << where;
  if (GetParam().is_cpu()) {
    EXPECT_THROW(engine.compute_device(l.view(), r.view(), ImageView<float>{}, ImageView<float>{}), InvalidArgument);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, SgmDevice, ::testing::ValuesIn(test::test_devices()), test::device_test_name);

// Real scenes as raw PGM copies (made by sgm_make_pgm; the GPU machine has no PNG decoder):
// $S3D_SGM_PGM_DIR/<scene>_left.pgm / _right.pgm. CUDA == CPU bit for bit end to end.
TEST(SgmRealScenes, CudaMatchesCpu) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const char* dir = std::getenv("S3D_SGM_PGM_DIR");
  if (!dir) GTEST_SKIP() << "S3D_SGM_PGM_DIR not set (PGM copies of the real scenes)";
  int scenes = 0;
  for (const char* scene : {"tsukuba", "cones", "kitti", "reindeer"}) {
    Image<std::uint8_t> l, r;
    if (!test::read_pgm(std::string(dir) + "/" + scene + "_left.pgm", l) ||
        !test::read_pgm(std::string(dir) + "/" + scene + "_right.pgm", r))
      continue;
    ++scenes;
    for (const auto& [D, method] : {std::pair{64, LrMethod::kRightSgm}, std::pair{128, LrMethod::kRightSgm},
                                    std::pair{128, LrMethod::kVolume}, std::pair{256, LrMethod::kVolume}}) {
      SgmParams p;
      p.disparities = D;
      p.lr_method = method;
      p.confidence = true;
      const SgmResult g = compute_sgm(Device(Device::Kind::kCuda, 0), p, l.view(), r.view());
      const SgmResult c = compute_sgm(kCpu, p, l.view(), r.view());
      std::string where;
      const std::string what = std::string(scene) + " D" + std::to_string(D) + " " + lr_method_name(method) + " ";
      EXPECT_TRUE(test::bit_equal(g.disparity, c.disparity, l.width, &where)) << what << where;
      EXPECT_TRUE(test::bit_equal(g.confidence, c.confidence, l.width, &where)) << what << where;
    }
  }
  EXPECT_GT(scenes, 0) << "no PGM scene found in " << dir;
}

}  // namespace
}  // namespace s3d::stereo
