// Exact equality with every golden keep list in ../shared/data/detections/golden (torchvision semantics),
// on every device. Inputs are parsed here with a small CSV reader and nlohmann-json (no s3d::io).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "s3d/detection/nms.hpp"
#include "test_support.hpp"

namespace s3d::detection {
namespace {

std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& path, char sep = ',') {
  std::ifstream f(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, sep)) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

std::vector<std::int64_t> read_indices(const std::filesystem::path& path) {
  std::ifstream f(path);
  std::vector<std::int64_t> v;
  std::int64_t x;
  while (f >> x) v.push_back(x);
  return v;
}

struct Loaded {
  std::vector<float> boxes, scores;
  std::vector<std::int64_t> a, b;  // two integer columns (level, or image/category)
};

class NmsGoldenTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }

 public:
  std::vector<std::int64_t> run(const Loaded& d, const std::vector<std::int64_t>* groups, float thr) {
    NmsInput in;
    in.boxes = d.boxes.data();
    in.scores = d.scores.data();
    in.group_ids = groups ? groups->data() : nullptr;
    in.count = static_cast<std::int64_t>(d.scores.size());
    NmsParams p;
    p.iou_threshold = thr;
    return nms(GetParam(), in, p).keep;
  }
};

TEST_P(NmsGoldenTest, RpnProposalsMmcv) {
  S3D_REQUIRE_DATA(csv, "detections/rpn_proposals_mmcv/proposals.csv");
  S3D_REQUIRE_DATA(golden, "detections/golden");
  Loaded d;
  const auto rows = read_csv(csv);
  for (std::size_t r = 1; r < rows.size(); ++r) {  // index,x1,y1,x2,y2,score,level
    for (int k = 1; k <= 4; ++k) d.boxes.push_back(static_cast<float>(std::stod(rows[r][k])));
    d.scores.push_back(static_cast<float>(std::stod(rows[r][5])));
    d.a.push_back(std::stoll(rows[r][6]));
  }
  ASSERT_EQ(d.scores.size(), 949u);
  const auto per_level = run(d, &d.a, 0.7f);
  EXPECT_EQ(per_level, read_indices(golden / "rpn_keep_iou0.7_per_level.txt"));
  EXPECT_EQ(per_level, read_indices(csv.parent_path() / "keep_expected_iou0.7_per_level.txt"));
  EXPECT_EQ(run(d, nullptr, 0.7f), read_indices(golden / "rpn_keep_iou0.7_class_agnostic.txt"));
  EXPECT_EQ(run(d, &d.a, 0.5f), read_indices(golden / "rpn_keep_iou0.5_per_level.txt"));
}

/// COCO results JSON (xywh -> xyxy as x, y, x + w, y + h in double, then float) against a golden JSON.
void check_coco(NmsGoldenTest* t, const std::filesystem::path& results, const std::filesystem::path& golden_file,
                std::size_t expected_boxes) {
  std::ifstream f(results);
  const auto j = nlohmann::json::parse(f);
  Loaded d;
  for (const auto& r : j) {
    const auto& b = r.at("bbox");
    const double x = b[0].get<double>(), y = b[1].get<double>(), w = b[2].get<double>(), h = b[3].get<double>();
    d.boxes.insert(d.boxes.end(), {static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + w),
                                   static_cast<float>(y + h)});
    d.scores.push_back(static_cast<float>(r.at("score").get<double>()));
    d.a.push_back(r.at("image_id").get<std::int64_t>());
    d.b.push_back(r.at("category_id").get<std::int64_t>());
  }
  ASSERT_EQ(d.scores.size(), expected_boxes);
  std::vector<std::int64_t> image_class;
  for (std::size_t i = 0; i < d.a.size(); ++i) image_class.push_back(d.a[i] * 100000 + d.b[i]);
  std::ifstream g(golden_file);
  const auto golden = nlohmann::json::parse(g);
  for (float thr : {0.5f, 0.7f}) {
    const std::string tag = thr == 0.5f ? "iou0.5" : "iou0.7";
    EXPECT_EQ(t->run(d, &image_class, thr), golden.at(tag + "_per_image_per_class").get<std::vector<std::int64_t>>())
        << tag;
    EXPECT_EQ(t->run(d, &d.a, thr), golden.at(tag + "_per_image_class_agnostic").get<std::vector<std::int64_t>>())
        << tag;
  }
}

TEST_P(NmsGoldenTest, CocoPersonDetections) {
  S3D_REQUIRE_DATA(results, "detections/coco_val2017_person4/test_coco_det_AP_H_56.json");
  S3D_REQUIRE_DATA(golden, "detections/golden/person4_keep.json");
  check_coco(this, results, golden, 118);
}

TEST_P(NmsGoldenTest, CocoFakeResults) {
  S3D_REQUIRE_DATA(results, "detections/coco_val2014_fake100/instances_val2014_fakebbox100_results.json");
  S3D_REQUIRE_DATA(golden, "detections/golden/fakebbox100_keep.json");
  check_coco(this, results, golden, 734);
}

TEST_P(NmsGoldenTest, MotPerFrame) {
  S3D_REQUIRE_DATA(golden_file, "detections/golden/mot15_keep_iou0.2_per_frame.json");
  S3D_REQUIRE_DATA(dir, "detections/mot15_frcnn_sort");
  std::ifstream g(golden_file);
  const auto golden = nlohmann::json::parse(g);
  std::size_t sequences = 0, kept_total = 0;
  for (const auto& [seq, keep] : golden.items()) {
    if (seq == "_doc") continue;
    const auto rows = read_csv(dir / (seq + ".det.txt"));
    Loaded d;
    for (const auto& r : rows) {  // frame,-1,left,top,w,h,score,...
      const double x = std::stod(r[2]), y = std::stod(r[3]), w = std::stod(r[4]), h = std::stod(r[5]);
      d.boxes.insert(d.boxes.end(), {static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + w),
                                     static_cast<float>(y + h)});
      d.scores.push_back(static_cast<float>(std::stod(r[6])));
      d.a.push_back(std::stoll(r[0]));
    }
    const auto expected = keep.get<std::vector<std::int64_t>>();
    EXPECT_EQ(run(d, &d.a, 0.2f), expected) << seq;
    ++sequences;
    kept_total += expected.size();
  }
  EXPECT_EQ(sequences, 11u);
  EXPECT_EQ(kept_total, 32749u);
}

INSTANTIATE_TEST_SUITE_P(Devices, NmsGoldenTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::detection
