// Regression bounds on s3d SGM's accuracy (CPU) on every real scene of ../shared/data/stereo, beside OpenCV
// StereoSGBM 3-way run in the same process (docs/ACCURACY.md). Two settings, each set explicitly here so the
// bounds hold whatever the library's defaults become:
//   - the defaults (uniqueness 0, occlusion fill): measured errors + a small margin on the
//     full frame (SGBM's empty left band counts as invalid), and the accuracy targets
//     per scene and mask: (a) <= 0.8x SGBM's (a) and (b) <= SGBM's (b) where docs/ACCURACY.md says they are
//     met, and the measured ratios (+ margin) where they are not, so no pair can drift;
//   - the precise setting (uniqueness 8, no fill): its bounds on the
//     columns x >= D and target (b) on every scene, on x >= D and on the full frame.
// A change that makes matching worse fails here; one that makes it better should tighten the bounds.
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
  // defaults, full frame: measured + 0.3 percentage points (density - 0.5)
  double bad2_all_a;     ///< bad-2 % over "all", invalid counted as wrong
  double bad2_all_b;     ///< bad-2 % over "all", estimated pixels only
  double bad2_nonocc_a;  ///< NAN: no nonocc mask
  double bad2_nonocc_b;
  double d1_all_a;  ///< KITTI's metric (NAN elsewhere)
  double d1_all_b;
  double min_density;
  // the accuracy targets (docs/ACCURACY.md) on the full frame, as ceilings on (ours / SGBM 3-way): 0.8 for (a) and 1.0
  // for (b) where met; the measured ratio + 0.03 where not (docs/ACCURACY.md lists them). KITTI: D1.
  double max_ratio_a_all, max_ratio_b_all, max_ratio_a_nonocc, max_ratio_b_nonocc;
  // precise setting, columns x >= D: measured + 0.3 (density - 0.5)
  double precise_bad2_all_a, precise_bad2_all_b, precise_bad2_nonocc_b, precise_min_density;
};

const Bound kBounds[] = {
    // tsukuba nonocc misses both: (a) 0.833x, (b) 2.442 vs 2.428 (1.006x)
    {"middlebury2001/tsukuba", 4.176 + 0.3, 3.517 + 0.3, 2.994 + 0.3, 2.442 + 0.3, NAN, NAN, 98.15 - 0.5, 0.8, 1.0,
     0.833 + 0.03, 1.006 + 0.03, 10.564 + 0.3, 2.547 + 0.3, 1.722 + 0.3, 89.83 - 0.5},
    // venus nonocc misses (b): 0.594 vs 0.491 (1.210x)
    {"middlebury2001/venus", 1.796 + 0.3, 1.143 + 0.3, 0.675 + 0.3, 0.594 + 0.3, NAN, NAN, 97.62 - 0.5, 0.8, 1.0, 0.8,
     1.210 + 0.03, 2.597 + 0.3, 0.994 + 0.3, 0.454 + 0.3, 98.42 - 0.5},
    // cones misses (b): all 5.310 vs 4.068 (1.305x), nonocc 3.131 vs 2.351 (1.332x)
    {"middlebury2003/cones", 12.717 + 0.3, 5.310 + 0.3, 3.738 + 0.3, 3.131 + 0.3, NAN, NAN, 92.00 - 0.5, 0.8,
     1.305 + 0.03, 0.8, 1.332 + 0.03, 9.494 + 0.3, 3.832 + 0.3, 2.299 + 0.3, 93.21 - 0.5},
    // teddy nonocc (b) is met by 0.001 (3.114 vs 3.115): held at 1.0 all the same
    {"middlebury2003/teddy", 13.841 + 0.3, 4.570 + 0.3, 5.494 + 0.3, 3.114 + 0.3, NAN, NAN, 90.39 - 0.5, 0.8, 1.0, 0.8,
     1.0, 12.153 + 0.3, 4.165 + 0.3, 2.678 + 0.3, 91.41 - 0.5},
    {"middlebury2005/Reindeer", 15.640 + 0.3, 4.857 + 0.3, 3.644 + 0.3, 2.242 + 0.3, NAN, NAN, 88.61 - 0.5, 0.8, 1.0,
     0.8, 1.0, 16.445 + 0.3, 3.492 + 0.3, 1.507 + 0.3, 86.40 - 0.5},
    {"kitti2015/000005_10", 24.972 + 0.3, 10.640 + 0.3, NAN, NAN, 20.475 + 0.3, 5.284 + 0.3, 83.43 - 0.5, 0.8, 1.0, NAN,
     NAN, 38.253 + 0.3, 6.320 + 0.3, NAN, 72.08 - 0.5},
    {"flyingthings3d/0006", 15.988 + 0.3, 5.791 + 0.3, NAN, NAN, NAN, NAN, 89.18 - 0.5, 0.8, 1.0, NAN, NAN,
     25.839 + 0.3, 2.759 + 0.3, NAN, 76.26 - 0.5},
};

void PrintTo(const Bound& b, std::ostream* os) { *os << b.scene; }

// The library's defaults (docs/ACCURACY.md "Defaults").
stereo::SgmParams default_params(int disparities) {
  stereo::SgmParams p;
  p.disparities = disparities;
  p.census = stereo::CensusKind::kFull;
  p.census_width = 9;
  p.census_height = 7;
  p.paths = 8;
  p.p1 = 24;
  p.p2 = 80;
  p.uniqueness = 0;
  p.lr_check = true;
  p.lr_max_diff = 2.0f;
  p.subpixel = true;
  p.median = true;
  p.speckle_size = 100;
  p.speckle_range = 2.0f;
  p.fill = true;
  return p;
}

// The precise setting (docs/ACCURACY.md).
stereo::SgmParams precise_params(int disparities) {
  stereo::SgmParams p = default_params(disparities);
  p.uniqueness = 8;
  p.fill = false;
  return p;
}

class SgmAccuracy : public ::testing::TestWithParam<Bound> {
 protected:
  const accuracy::Scene* scene_ = nullptr;
  accuracy::LoadedScene loaded_;
  bool find() {
    for (const auto& s : accuracy::scenes())
      if (s.name == GetParam().scene) scene_ = &s;
    return scene_ != nullptr;
  }
  void read() { loaded_ = accuracy::load(*scene_, (test::data_dir() / "stereo").string()); }
};

TEST_P(SgmAccuracy, DefaultsStayWithinTheMeasuredBoundsOnTheFullFrame) {
  const Bound b = GetParam();
  ASSERT_TRUE(find());
  S3D_REQUIRE_DATA(gt, "stereo/" + scene_->gt);
  read();
  const stereo::EvalResult ev = stereo::evaluate_disparity(
      accuracy::run_ours(loaded_, default_params(scene_->disparities)).cview(), loaded_.gt.cview(), loaded_.masks);
  const stereo::RegionErrors* all = ev.find("all");
  ASSERT_NE(all, nullptr);
  EXPECT_LE(all->bad2_all, b.bad2_all_a) << b.scene;
  EXPECT_LE(all->bad2_est, b.bad2_all_b) << b.scene;
  EXPECT_GE(ev.density, b.min_density) << b.scene;
  if (!std::isnan(b.d1_all_a)) {
    EXPECT_LE(all->d1_all, b.d1_all_a) << b.scene;
    EXPECT_LE(all->d1_est, b.d1_all_b) << b.scene;
  }
  if (!std::isnan(b.bad2_nonocc_a)) {
    const stereo::RegionErrors* nonocc = ev.find("nonocc");
    ASSERT_NE(nonocc, nullptr);
    EXPECT_LE(nonocc->bad2_all, b.bad2_nonocc_a) << b.scene;
    EXPECT_LE(nonocc->bad2_est, b.bad2_nonocc_b) << b.scene;
  }
  RecordProperty("bad2_all_a", std::to_string(all->bad2_all));
  RecordProperty("bad2_all_b", std::to_string(all->bad2_est));
}

// The accuracy targets (docs/ACCURACY.md) with the defaults, full frame, against StereoSGBM 3-way on the same pair and
// D.
TEST_P(SgmAccuracy, DefaultsMeetTheTargetsWhereMeasured) {
  const Bound b = GetParam();
  ASSERT_TRUE(find());
  S3D_REQUIRE_DATA(gt, "stereo/" + scene_->gt);
  read();
  const stereo::EvalResult ours = stereo::evaluate_disparity(
      accuracy::run_ours(loaded_, default_params(scene_->disparities)).cview(), loaded_.gt.cview(), loaded_.masks);
  const stereo::EvalResult sgbm = stereo::evaluate_disparity(
      accuracy::run_sgbm(loaded_, scene_->disparities, accuracy::SgbmMode::kThreeWay).cview(), loaded_.gt.cview(),
      loaded_.masks);
  int checked = 0;
  for (const char* region : {"all", "nonocc"}) {
    const bool is_all = std::string(region) == "all";
    const double max_a = is_all ? b.max_ratio_a_all : b.max_ratio_a_nonocc;
    const double max_b = is_all ? b.max_ratio_b_all : b.max_ratio_b_nonocc;
    if (std::isnan(max_a)) continue;
    const stereo::RegionErrors* o = ours.find(region);
    const stereo::RegionErrors* g = sgbm.find(region);
    ASSERT_TRUE(o && g) << b.scene << " " << region;
    const double oa = scene_->kitti ? o->d1_all : o->bad2_all, ob = scene_->kitti ? o->d1_est : o->bad2_est;
    const double ga = scene_->kitti ? g->d1_all : g->bad2_all, gb = scene_->kitti ? g->d1_est : g->bad2_est;
    EXPECT_LE(oa, max_a * ga) << b.scene << " " << region << " (a): ours " << oa << ", SGBM " << ga;
    EXPECT_LE(ob, max_b * gb) << b.scene << " " << region << " (b): ours " << ob << ", SGBM " << gb;
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// The precise setting: its bounds on x >= D, and (b) no worse than SGBM 3-way on every scene and mask, on
// x >= D and on the full frame (KITTI: D1 too).
TEST_P(SgmAccuracy, PreciseSettingStaysWithinBoundsAndMeetsTargetB) {
  const Bound b = GetParam();
  ASSERT_TRUE(find());
  S3D_REQUIRE_DATA(gt, "stereo/" + scene_->gt);
  read();
  const io::ImageF d = accuracy::run_ours(loaded_, precise_params(scene_->disparities));
  const io::ImageF s = accuracy::run_sgbm(loaded_, scene_->disparities, accuracy::SgbmMode::kThreeWay);
  const stereo::EvalOptions cols = accuracy::fair_columns(loaded_.gt.width, scene_->disparities);
  const stereo::EvalResult fair = stereo::evaluate_disparity(d.cview(), loaded_.gt.cview(), loaded_.masks, cols);
  const stereo::RegionErrors* all = fair.find("all");
  ASSERT_NE(all, nullptr);
  EXPECT_LE(all->bad2_all, b.precise_bad2_all_a) << b.scene;
  EXPECT_LE(all->bad2_est, b.precise_bad2_all_b) << b.scene;
  EXPECT_GE(fair.density, b.precise_min_density) << b.scene;
  if (!std::isnan(b.precise_bad2_nonocc_b)) {
    const stereo::RegionErrors* nonocc = fair.find("nonocc");
    ASSERT_NE(nonocc, nullptr);
    EXPECT_LE(nonocc->bad2_est, b.precise_bad2_nonocc_b) << b.scene;
  }
  for (int pass = 0; pass < 2; ++pass) {
    const stereo::EvalResult ours =
        pass == 0 ? fair : stereo::evaluate_disparity(d.cview(), loaded_.gt.cview(), loaded_.masks);
    const stereo::EvalResult sgbm = pass == 0
                                        ? stereo::evaluate_disparity(s.cview(), loaded_.gt.cview(), loaded_.masks, cols)
                                        : stereo::evaluate_disparity(s.cview(), loaded_.gt.cview(), loaded_.masks);
    for (const auto& r : sgbm.regions) {
      if (r.region != "all" && r.region != "nonocc") continue;  // the target's regions (disc: see ACCURACY.md)
      const stereo::RegionErrors* o = ours.find(r.region);
      ASSERT_NE(o, nullptr);
      const char* view = pass == 0 ? " x >= D" : " full frame";
      EXPECT_LE(o->bad2_est, r.bad2_est) << b.scene << " " << r.region << view;
      if (scene_->kitti) EXPECT_LE(o->d1_est, r.d1_est) << b.scene << " D1 " << r.region << view;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RealScenes, SgmAccuracy, ::testing::ValuesIn(kBounds),
                         [](const ::testing::TestParamInfo<Bound>& info) {
                           std::string n = info.param.scene;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
