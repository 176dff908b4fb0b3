// A depth sequence's files joined to s3d::fusion's types: frames read for the runner, pose files as a
// trajectory, records as JSON Lines. Written and checked field by field here.
#include "s3d/io/fusion_files.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "s3d/io/image.hpp"
#include "test_support.hpp"

namespace s3d::io {
namespace {

using FusionFilesTest = test::TempFolderTest;

TEST_F(FusionFilesTest, AFrameReadsItsDepthInMetresAndItsColourOrSaysWhyNot) {
  ImageU16 depth(3, 2, 1, 1500);
  depth.at(2, 1) = 0;
  write_image(path("d.png"), depth);
  write_image(path("c.png"), ImageU8(3, 2, 3, 40));
  write_image(path("small.png"), ImageU8(2, 2, 3, 40));

  const fusion::LoadedFrame f = read_rgbd_frame({0, 0.0, path("d.png"), path("c.png")}, 1000.0, true);
  EXPECT_TRUE(f.error.empty());
  EXPECT_TRUE(f.color_error.empty());
  EXPECT_FLOAT_EQ(f.depth.at(0, 0), 1.5f);
  EXPECT_FALSE(std::isfinite(f.depth.at(2, 1)));
  EXPECT_EQ(f.rgb.data.size(), 18u);
  EXPECT_TRUE(read_rgbd_frame({0, 0.0, path("d.png"), path("c.png")}, 1000.0, false).rgb.empty());

  const fusion::LoadedFrame wrong = read_rgbd_frame({0, 0.0, path("d.png"), path("small.png")}, 1000.0, true);
  EXPECT_TRUE(wrong.error.empty());
  EXPECT_EQ(wrong.color_error.rfind(path("small.png"), 0), 0u) << wrong.color_error;
  EXPECT_TRUE(wrong.rgb.empty());

  const fusion::LoadedFrame missing = read_rgbd_frame({0, 0.0, path("none.png"), path("c.png")}, 1000.0, true);
  EXPECT_EQ(missing.error.rfind(path("none.png"), 0), 0u) << missing.error;
  EXPECT_TRUE(missing.color_error.empty());  // not tried without depth
}

TEST_F(FusionFilesTest, SourcesAndThePoseFilesTrajectory) {
  std::ofstream(path("p0.txt")) << "1 0 0 0.5\n0 1 0 0\n0 0 1 0\n0 0 0 1\n";
  std::ofstream(path("p2.txt")) << "1 0 0 0\n0 1 0 -2\n0 0 1 0\n0 0 0 1\n";
  const std::vector<RgbdFrame> frames{
      {4, 0.1, "a.png", "", path("p0.txt")}, {5, 0.2, "b.png", "", ""}, {6, 0.3, "c.png", "", path("p2.txt")}};
  const auto sources = frame_sources(frames);
  ASSERT_EQ(sources.size(), 3u);
  EXPECT_EQ(sources[1].index, 5u);
  EXPECT_DOUBLE_EQ(sources[1].timestamp, 0.2);
  EXPECT_EQ(sources[1].file, "b.png");
  const fusion::Trajectory t = pose_files_trajectory(frames);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].timestamp, 0.1);
  EXPECT_DOUBLE_EQ(t[0].pose.translation().x(), 0.5);
  EXPECT_DOUBLE_EQ(t[1].timestamp, 0.3);
  EXPECT_DOUBLE_EQ(t[1].pose.translation().y(), -2.0);
}

TEST(FramesJsonl, OneLinePerRecordWithTheFieldsThatApply) {
  std::vector<fusion::FrameRecord> frames(2);
  frames[0].source = {7, 1.25, "d7.png"};
  frames[0].processed = true;
  frames[0].result.status = fusion::FrameStatus::kRecovered;
  frames[0].result.inliers = 1200;
  frames[0].result.frame_fallback = true;
  frames[0].result.motion_start = true;
  frames[0].result.reason = "re-tracked";
  frames[0].result.track_ms = 2.5;
  frames[0].color = false;
  frames[0].color_error = "c7.png: missing";
  frames[1].source = {8, 1.5, "d8.png"};
  frames[1].error = "d8.png: cannot read";
  frames[1].read_ms = 0.75;

  const std::string text = frames_jsonl(frames, true);
  ASSERT_EQ(text.back(), '\n');
  std::istringstream lines(text);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(lines, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["index"], 7);
  EXPECT_EQ(rows[0]["timestamp"], 1.25);
  EXPECT_EQ(rows[0]["status"], "recovered");
  EXPECT_EQ(rows[0]["inliers"], 1200);
  EXPECT_EQ(rows[0]["reference"], "previous frame");
  EXPECT_EQ(rows[0]["start"], "features");
  EXPECT_EQ(rows[0]["reason"], "re-tracked");
  EXPECT_EQ(rows[0]["ms"]["track"], 2.5);
  EXPECT_EQ(rows[0]["color"], false);
  EXPECT_EQ(rows[0]["color_error"], "c7.png: missing");
  EXPECT_EQ(rows[1]["status"], "error");
  EXPECT_EQ(rows[1]["reason"], "d8.png: cannot read");
  EXPECT_EQ(rows[1]["ms"]["read"], 0.75);
  EXPECT_FALSE(rows[1].contains("inliers"));
  // Without colour in the model, no colour fields.
  const nlohmann::json plain = nlohmann::json::parse(frames_jsonl({frames[0]}, false));
  EXPECT_FALSE(plain.contains("color"));
  EXPECT_FALSE(plain.contains("color_error"));
  EXPECT_EQ(frames_jsonl({}, true), "");
}

}  // namespace
}  // namespace s3d::io
