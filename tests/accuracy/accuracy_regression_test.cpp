// Regression bounds on s3d SGM's accuracy (CPU) on every real scene of ../shared/data/stereo, with the
// settings chosen in docs/ACCURACY.md (set explicitly here, so the bounds hold whatever the library's
// defaults become): the errors measured there plus a small margin. A change that makes matching worse
// fails here; one that makes it better should tighten the bounds. Columns x >= D (see scenes.hpp).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>

#include "scenes.hpp"
#include "test_support.hpp"

using namespace s3d;

namespace {

struct Bound {
  const char* scene;
  double bad2_all_a;     ///< bad-2 % over the "all" region, invalid counted as wrong
  double bad2_all_b;     ///< bad-2 % over the "all" region, estimated pixels only
  double bad2_nonocc_b;  ///< bad-2 % over nonocc, estimated pixels only (NAN: no nonocc mask)
  double min_density;    ///< % of pixels with an estimate
  // With SgmParams::fill (the same settings otherwise): density 100 %, so (a) == (b).
  double fill_bad2_all_a;     ///< bad-2 % over "all", invalid counted as wrong
  double fill_bad2_nonocc_a;  ///< bad-2 % over nonocc (NAN: no nonocc mask)
  double fill_d1_all_a;       ///< D1 % over "all" (KITTI's metric; NAN elsewhere)
};

// Measured on 2026-11-22 with the defaults of docs/ACCURACY.md (P1 24, P2 80, uniqueness 8, LR 2 px)
// + 0.3 percentage points (density - 0.5); the fill bounds likewise (measured the same day with --fill).
const Bound kBounds[] = {
    {"middlebury2001/tsukuba", 10.564 + 0.3, 2.547 + 0.3, 1.722 + 0.3, 89.83 - 0.5, 4.139 + 0.3, 3.168 + 0.3, NAN},
    {"middlebury2001/venus", 2.597 + 0.3, 0.994 + 0.3, 0.454 + 0.3, 98.42 - 0.5, 1.043 + 0.3, 0.501 + 0.3, NAN},
    {"middlebury2003/cones", 9.494 + 0.3, 3.832 + 0.3, 2.299 + 0.3, 93.21 - 0.5, 5.708 + 0.3, 3.572 + 0.3, NAN},
    {"middlebury2003/teddy", 12.153 + 0.3, 4.165 + 0.3, 2.678 + 0.3, 91.41 - 0.5, 5.399 + 0.3, 3.932 + 0.3, NAN},
    {"middlebury2005/Reindeer", 16.445 + 0.3, 3.492 + 0.3, 1.507 + 0.3, 86.40 - 0.5, 6.394 + 0.3, 3.195 + 0.3, NAN},
    {"kitti2015/000005_10", 38.253 + 0.3, 6.320 + 0.3, NAN, 72.08 - 0.5, 13.547 + 0.3, NAN, 7.509 + 0.3},
    {"flyingthings3d/0006", 25.839 + 0.3, 2.759 + 0.3, NAN, 76.26 - 0.5, 10.874 + 0.3, NAN, NAN},
};

void PrintTo(const Bound& b, std::ostream* os) { *os << b.scene; }

// The settings of docs/ACCURACY.md ("Defaults"; the library's defaults as of 2026-11-22).
stereo::SgmParams chosen_params(int disparities) {
  stereo::SgmParams p;
  p.disparities = disparities;
  p.census = stereo::CensusKind::kFull;
  p.census_width = 9;
  p.census_height = 7;
  p.paths = 8;
  p.p1 = 24;
  p.p2 = 80;
  p.uniqueness = 8;
  p.lr_check = true;
  p.lr_max_diff = 2.0f;
  p.subpixel = true;
  p.median = true;
  p.speckle_size = 100;
  p.speckle_range = 2.0f;
  return p;
}

class SgmAccuracy : public ::testing::TestWithParam<Bound> {};

TEST_P(SgmAccuracy, ErrorsStayWithinTheMeasuredBounds) {
  const Bound b = GetParam();
  const accuracy::Scene* scene = nullptr;
  for (const auto& s : accuracy::scenes())
    if (s.name == b.scene) scene = &s;
  ASSERT_NE(scene, nullptr);
  S3D_REQUIRE_DATA(gt, "stereo/" + scene->gt);
  const accuracy::LoadedScene s = accuracy::load(*scene, (test::data_dir() / "stereo").string());
  const stereo::SgmParams p = chosen_params(scene->disparities);
  const io::ImageF d = accuracy::run_ours(s, p);
  const io::EvalResult ev = io::evaluate_disparity(d, s.gt, s.masks, accuracy::fair_columns(s.gt.width, p.disparities));
  const io::RegionErrors* all = ev.find("all");
  ASSERT_NE(all, nullptr);
  EXPECT_LE(all->bad2_all, b.bad2_all_a) << b.scene;
  EXPECT_LE(all->bad2_est, b.bad2_all_b) << b.scene;
  EXPECT_GE(ev.density, b.min_density) << b.scene;
  if (!std::isnan(b.bad2_nonocc_b)) {
    const io::RegionErrors* nonocc = ev.find("nonocc");
    ASSERT_NE(nonocc, nullptr);
    EXPECT_LE(nonocc->bad2_est, b.bad2_nonocc_b) << b.scene;
  }
  RecordProperty("bad2_all_a", std::to_string(all->bad2_all));
  RecordProperty("bad2_all_b", std::to_string(all->bad2_est));
}

// The target (b): over estimated pixels, no worse than OpenCV StereoSGBM 3-way on the same pair/D.
TEST_P(SgmAccuracy, EstimatedPixelsNoWorseThanStereoSgbm) {
  const Bound b = GetParam();
  const accuracy::Scene* scene = nullptr;
  for (const auto& s : accuracy::scenes())
    if (s.name == b.scene) scene = &s;
  ASSERT_NE(scene, nullptr);
  S3D_REQUIRE_DATA(gt, "stereo/" + scene->gt);
  const accuracy::LoadedScene s = accuracy::load(*scene, (test::data_dir() / "stereo").string());
  const io::EvalOptions cols = accuracy::fair_columns(s.gt.width, scene->disparities);
  const io::EvalResult ours =
      io::evaluate_disparity(accuracy::run_ours(s, chosen_params(scene->disparities)), s.gt, s.masks, cols);
  const io::EvalResult sgbm = io::evaluate_disparity(
      accuracy::run_sgbm(s, scene->disparities, accuracy::SgbmMode::kThreeWay), s.gt, s.masks, cols);
  for (const auto& r : sgbm.regions) {
    if (r.region != "all" && r.region != "nonocc") continue;  // the target's regions (disc: see ACCURACY.md)
    const io::RegionErrors* o = ours.find(r.region);
    ASSERT_NE(o, nullptr);
    EXPECT_LE(o->bad2_est, r.bad2_est) << b.scene << " " << r.region;
    if (scene->kitti) EXPECT_LE(o->d1_est, r.d1_est) << b.scene << " D1 " << r.region;  // KITTI's target metric
  }
}

// With the background fill (SgmParams::fill) as the last stage: the measured (a) bounds, a dense map, and
// the target (a) <= 0.8 x SGBM 3-way's (a) on every scene/mask pair where docs/ACCURACY.md says
// the fill meets it (all but tsukuba nonocc, ratio 0.88: checked against 0.9 there so it cannot drift).
TEST_P(SgmAccuracy, FilledErrorsStayWithinTheMeasuredBoundsAndMeetTargetA) {
  const Bound b = GetParam();
  const accuracy::Scene* scene = nullptr;
  for (const auto& s : accuracy::scenes())
    if (s.name == b.scene) scene = &s;
  ASSERT_NE(scene, nullptr);
  S3D_REQUIRE_DATA(gt, "stereo/" + scene->gt);
  const accuracy::LoadedScene s = accuracy::load(*scene, (test::data_dir() / "stereo").string());
  stereo::SgmParams p = chosen_params(scene->disparities);
  p.fill = true;
  const io::EvalOptions cols = accuracy::fair_columns(s.gt.width, p.disparities);
  const io::EvalResult ev = io::evaluate_disparity(accuracy::run_ours(s, p), s.gt, s.masks, cols);
  const io::EvalResult sgbm = io::evaluate_disparity(
      accuracy::run_sgbm(s, scene->disparities, accuracy::SgbmMode::kThreeWay), s.gt, s.masks, cols);
  EXPECT_GE(ev.density, 99.9) << b.scene;  // every row of these scenes has estimates
  const io::RegionErrors* all = ev.find("all");
  ASSERT_NE(all, nullptr);
  EXPECT_LE(all->bad2_all, b.fill_bad2_all_a) << b.scene;
  if (!std::isnan(b.fill_d1_all_a)) EXPECT_LE(all->d1_all, b.fill_d1_all_a) << b.scene;
  if (!std::isnan(b.fill_bad2_nonocc_a)) {
    const io::RegionErrors* nonocc = ev.find("nonocc");
    ASSERT_NE(nonocc, nullptr);
    EXPECT_LE(nonocc->bad2_all, b.fill_bad2_nonocc_a) << b.scene;
  }
  for (const char* region : {"all", "nonocc"}) {
    const io::RegionErrors* o = ev.find(region);
    const io::RegionErrors* g = sgbm.find(region);
    if (!o || !g) continue;
    const double ours_a = scene->kitti ? o->d1_all : o->bad2_all;
    const double sgbm_a = scene->kitti ? g->d1_all : g->bad2_all;
    const bool exception = std::string(b.scene) == "middlebury2001/tsukuba" && std::string(region) == "nonocc";
    EXPECT_LE(ours_a, (exception ? 0.9 : 0.8) * sgbm_a) << b.scene << " " << region;
  }
  RecordProperty("fill_bad2_all_a", std::to_string(all->bad2_all));
}

INSTANTIATE_TEST_SUITE_P(RealScenes, SgmAccuracy, ::testing::ValuesIn(kBounds),
                         [](const ::testing::TestParamInfo<Bound>& info) {
                           std::string n = info.param.scene;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
