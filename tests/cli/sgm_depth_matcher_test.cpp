// sgm-depth's handle stage (apps/sgm_depth/matcher): pairs queued ahead over several devices come back to the
// item they belong to. Two CPU lanes stand for two GPUs here (the CPU pipeline computes a pair when it is
// queued, so a pair retrieved from the wrong lane or slot is another pair's disparity); the oracle is one
// lane without anything queued ahead. The same run on two GPUs: scripts/gpu-node-throughput.sh compares outputs.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "../../apps/sgm_depth/matcher.hpp"

namespace s3d::sgm_depth {
namespace {

class RecordingContext final : public cli::ItemContext {
 public:
  std::string output_path(std::size_t, const std::string&) const override { return ""; }
  void write_atomically(const std::string&, const std::function<void(const std::string&)>&) override {}
  void write_folder_atomically(const std::string&, const std::function<void(const std::string&)>&) override {}
  std::string readable_path(const std::string& input) override { return input; }
  const Device& device() const override { return device_; }
  void add_stage_seconds(const std::string& stage, double) override { stages.push_back(stage); }
  void mark_interrupted() override {}
  std::vector<std::string> stages;

 private:
  Device device_;
};

// A textured pair whose right view is the left shifted by `shift` pixels (each item its own texture).
LoadedPair pair_of(int width, int height, int shift, unsigned seed) {
  std::mt19937 rng(seed);
  LoadedPair p;
  p.left8 = io::ImageU8(width, height);
  p.right8 = io::ImageU8(width, height);
  for (auto& v : p.left8.data) v = static_cast<std::uint8_t>(rng());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) p.right8.at(x, y) = p.left8.at(std::min(width - 1, x + shift), y);
  return p;
}

stereo::SgmParams params() {
  stereo::SgmParams p;
  p.disparities = 16;
  return p;
}

std::vector<float> alone(const LoadedPair& p) {
  PairMatcher one({Device(Device::Kind::kCpu)}, params(), 0);
  RecordingContext ctx;
  return one.match(0, p, {}, "alone", ctx).disparity.data;
}

}  // namespace

TEST(SgmDepthMatcher, PairsQueuedAheadOnTwoLanesComeBackToTheirItems) {
  std::vector<LoadedPair> pairs;
  for (int i = 0; i < 9; ++i)
    pairs.push_back(i < 7 ? pair_of(37, 23, 1 + i % 5, 10u + i) : pair_of(29, 17, 3, 10u + i));
  PairMatcher two({Device(Device::Kind::kCpu), Device(Device::Kind::kCpu)}, params(), 0);
  // Items 0..8 in order, each handed the next three loaded ones, except that item 4 fails before matching
  // (its pair was queued ahead and must be dropped) and items 7 and 8 have another size (the lanes rebuilt).
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (i == 4) continue;
    PairsAhead ahead;
    for (std::size_t j = i + 1; j < pairs.size() && j <= i + 3; ++j)
      if (!(j == 4 && i != 3)) ahead.emplace_back(j, &pairs[j]);
    if (i == 3) ahead.resize(1);  // 3 sees 4 loaded; 4 then fails
    RecordingContext ctx;
    const Match m = two.match(i, pairs[i], ahead, "item " + std::to_string(i), ctx);
    EXPECT_EQ(m.disparity.data, alone(pairs[i])) << "item " << i;
    EXPECT_EQ(m.disparity.width, pairs[i].width());
    EXPECT_EQ(ctx.stages, (std::vector<std::string>{"compute", "compute"}));
  }
}

TEST(SgmDepthMatcher, ItemsInAnotherOrderThanQueuedAreMatchedAfresh) {
  std::vector<LoadedPair> pairs;
  for (int i = 0; i < 4; ++i) pairs.push_back(pair_of(31, 19, 2 + i, 50u + i));
  PairMatcher two({Device(Device::Kind::kCpu), Device(Device::Kind::kCpu)}, params(), 0);
  RecordingContext ctx;
  EXPECT_EQ(two.match(0, pairs[0], {{1, &pairs[1]}, {2, &pairs[2]}}, "0", ctx).disparity.data, alone(pairs[0]));
  // 1 and 2 were queued; the frame stopped (e.g. --fail-fast elsewhere) and a later call asks for 3.
  EXPECT_EQ(two.match(3, pairs[3], {}, "3", ctx).disparity.data, alone(pairs[3]));
  EXPECT_EQ(two.match(1, pairs[1], {}, "1", ctx).disparity.data, alone(pairs[1]));
}

}  // namespace s3d::sgm_depth
