// sgm-depth over a batch (decode and write on the frame's worker threads; on a GPU, SgmPipeline
// overlapping the next upload with the current compute): every output equals the one-pair run of the same
// pair byte for byte, records come in input order, bad items in the middle (size mismatch, unreadable file)
// fail alone with one line and no output, size changes and 8/16-bit pairs mix, and --shard, --manifest and
// --skip-existing keep their meaning. Runs on `--device auto` (the GPU pipeline where there is a GPU).
// Label `cli`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "s3d/io/image.hpp"

#include "command_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kExe = S3D_SGM_DEPTH_EXE;
const fs::path kSample = fs::path(S3D_SOURCE_DIR) / "data" / "sample";

using s3d::test::slurp;

// The tool's records with "type": "item".
struct Result : s3d::test::CommandResult {
  std::vector<json> items() const {
    std::vector<json> r;
    for (json& rec : records())
      if (rec["type"] == "item") r.push_back(std::move(rec));
    return r;
  }
};

class SgmDepthBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d_sgm_batch_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
    // The batch: sample, a crop (other size), the sample as 16-bit with other low bits, a size mismatch,
    // the crop again, an unreadable left image, a shifted sample.
    using namespace s3d::io;
    const ImageU8 l = read_grey8((kSample / "left.png").string()), r = read_grey8((kSample / "right.png").string());
    auto crop = [](const ImageU8& im, int x0, int w, int h) {
      ImageU8 c(w, h);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) c.at(x, y) = im.at(x0 + x, y);
      return c;
    };
    auto sixteen = [](const ImageU8& im, int salt) {
      ImageU16 s(im.width, im.height);
      for (std::size_t i = 0; i < s.data.size(); ++i)
        s.data[i] = static_cast<std::uint16_t>(im.data[i] * 256 + (i * salt) % 256);
      return s;
    };
    write_image(in("a_l.png"), l);
    write_image(in("a_r.png"), r);
    write_image(in("c_l.png"), crop(l, 0, 283, 201));
    write_image(in("c_r.png"), crop(r, 0, 283, 201));
    write_image(in("s_l.png"), sixteen(l, 7));
    write_image(in("s_r.png"), sixteen(r, 13));
    write_image(in("m_r.png"), crop(r, 0, 300, 240));
    std::ofstream(in("x_l.png")) << "this is not an image";
    write_image(in("d_l.png"), crop(l, 17, 303, 240));
    write_image(in("d_r.png"), crop(r, 17, 303, 240));
    pairs_ = {{in("a_l.png"), in("a_r.png")}, {in("c_l.png"), in("c_r.png")}, {in("s_l.png"), in("s_r.png")},
              {in("a_l.png"), in("m_r.png")}, {in("c_l.png"), in("c_r.png")}, {in("x_l.png"), in("a_r.png")},
              {in("d_l.png"), in("d_r.png")}};
    ok_ = {true, true, true, false, true, false, true};
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string in(const std::string& name) const { return (dir_ / "in" / name).string(); }
  Result run(const std::string& args) {
    // --emit last: a repeatable option would take the positional inputs after it as its values
    return {s3d::test::run_command(s3d::test::shell_quote(kExe) + " --device auto --threads 2 -D 32 " + args +
                                       " --emit disparity --emit confidence",
                                   dir_)};
  }
  std::string positional() const {
    std::string s;
    for (const auto& [l, r] : pairs_) s += " " + l + " " + r;
    return s;
  }
  // The outputs of pair k run alone (the reference), made once per test.
  const std::string& reference(std::size_t k, int which) {
    if (refs_.empty()) {
      fs::create_directories(dir_ / "ref");
      for (std::size_t i = 0; i < pairs_.size(); ++i) {
        if (!ok_[i]) {
          refs_.push_back({"", ""});
          continue;
        }
        const std::string d = (dir_ / "ref" / "d.pfm").string(), c = (dir_ / "ref" / "c.pfm").string();
        const Result r = run(pairs_[i].first + " " + pairs_[i].second + " -o " + d + " -o " + c + " --overwrite");
        EXPECT_EQ(r.code, 0) << r.err;
        refs_.push_back({slurp(d), slurp(c)});
      }
    }
    return which == 0 ? refs_[k].first : refs_[k].second;
  }
  // Checks the outputs `out/{#}.pfm` and `out/{#}_c.pfm` of the items of `expected` (1-based numbers).
  void expect_outputs(const fs::path& out, const std::vector<std::size_t>& processed) {
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(out)) files += e.is_regular_file();
    std::size_t want = 0;
    for (std::size_t k : processed) {
      const fs::path d = out / (std::to_string(k + 1) + ".pfm"), c = out / (std::to_string(k + 1) + "_c.pfm");
      if (!ok_[k]) {
        EXPECT_FALSE(fs::exists(d)) << d;
        EXPECT_FALSE(fs::exists(c)) << c;
        continue;
      }
      want += 2;
      EXPECT_TRUE(slurp(d) == reference(k, 0)) << "disparity of item " << k;
      EXPECT_TRUE(slurp(c) == reference(k, 1)) << "confidence of item " << k;
    }
    EXPECT_EQ(files, want) << "stray or missing files in " << out;
  }
  fs::path dir_;
  std::vector<std::pair<std::string, std::string>> pairs_;
  std::vector<bool> ok_;
  std::vector<std::pair<std::string, std::string>> refs_;
};

TEST_F(SgmDepthBatch, OutputsEqualSingleRunsInOrderWithFailuresInTheMiddle) {
  const fs::path out = dir_ / "out";
  const Result r =
      run(positional() + " -o " + (out / "{#}.pfm").string() + " -o " + (out / "{#}_c.pfm").string() + " --json");
  EXPECT_EQ(r.code, 1) << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0], "sgm-depth: " + in("a_l.png") + ": 320x240 but " + in("m_r.png") + " is 300x240");
  EXPECT_EQ(lines[1].rfind("sgm-depth: " + in("x_l.png") + ": ", 0), 0u) << lines[1];
  const auto items = r.items();
  ASSERT_EQ(items.size(), pairs_.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    EXPECT_EQ(items[k]["index"], k);
    EXPECT_EQ(items[k]["status"], ok_[k] ? "ok" : "failed") << items[k].dump();
    if (ok_[k]) EXPECT_EQ(items[k]["bit_depth"], k == 2 ? 16 : 8);
  }
  expect_outputs(out, {0, 1, 2, 3, 4, 5, 6});
}

TEST_F(SgmDepthBatch, ShardManifestAndSkipExistingKeepTheirMeaning) {
  // --shard 1/2: items 1, 3, 5 (the crop, the mismatch, the unreadable file)
  const fs::path shard = dir_ / "shard";
  const Result s = run(positional() + " -o " + (shard / "{#}.pfm").string() + " -o " + (shard / "{#}_c.pfm").string() +
                       " --shard 1/2 --json");
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_EQ(s.err_lines().size(), 2u) << s.err;
  const auto items = s.items();
  ASSERT_EQ(items.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(items[k]["index"], 2 * k + 1);
  expect_outputs(shard, {1, 3, 5});

  // the same batch from a manifest, with item 3's (1-based: 3) outputs already there: skipped, the rest as before
  const fs::path man = dir_ / "manifest.jsonl", out = dir_ / "out";
  {
    std::ofstream m(man);
    for (const auto& [l, r] : pairs_) m << json{{"left", l}, {"right", r}}.dump() << "\n";
  }
  fs::create_directories(out);
  std::ofstream(out / "3.pfm") << "old";
  std::ofstream(out / "3_c.pfm") << "old";
  const Result m = run("--manifest " + man.string() + " -o " + (out / "{#}.pfm").string() + " -o " +
                       (out / "{#}_c.pfm").string() + " --skip-existing --json");
  EXPECT_EQ(m.code, 1) << m.err;
  const auto mi = m.items();
  ASSERT_EQ(mi.size(), pairs_.size());
  EXPECT_EQ(mi[2]["status"], "skipped");
  EXPECT_EQ(slurp(out / "3.pfm"), "old");
  fs::remove(out / "3.pfm");
  fs::remove(out / "3_c.pfm");
  ok_[2] = false;  // skipped: no new output
  expect_outputs(out, {0, 1, 2, 3, 4, 5, 6});
}

}  // namespace
