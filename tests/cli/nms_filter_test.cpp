// nms-filter end to end: the built executable on the real detection files, compared with the golden keep
// lists; stdin/stdout piping; exit codes and one-line errors; and an observable effect of every flag.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/io/boxes.hpp"
#include "test_support.hpp"

#ifndef S3D_NMS_FILTER_EXE
#error "S3D_NMS_FILTER_EXE must name the nms-filter executable"
#endif

#include "command_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using s3d::test::shell_quote;
using s3d::test::slurp;
using Result = s3d::test::CommandResult;

class NmsFilterCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d_nms_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Runs `nms-filter ARGS` through the shell (ARGS may hold redirections and pipes into it via `pre`).
  Result run(const std::string& args, const std::string& pre = "") const {
    return s3d::test::run_command(pre + shell_quote(S3D_NMS_FILTER_EXE) + " --device " + device_ + " " + args, dir_);
  }

  std::string write(const std::string& name, const std::string& content) const {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

  static std::vector<long> numbers(const std::string& text) {
    std::vector<long> v;
    std::istringstream in(text);
    long x;
    while (in >> x) v.push_back(x);
    return v;
  }

  static std::vector<json> json_lines(const std::string& text) {
    std::vector<json> v;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) v.push_back(json::parse(line));
    return v;
  }

  static std::size_t lines(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }

  std::vector<std::string> files_in_dir() const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir_)) v.push_back(e.path().filename().string());
    return v;
  }

  /// The devices the golden tests run on: the CPU, and the GPU when one is visible (same keep lists).
  static std::vector<std::string> devices() {
    std::vector<std::string> d{"cpu"};
    if (s3d::cuda_device_count() > 0) d.push_back("cuda");
    return d;
  }

  fs::path dir_;
  std::string device_ = "cpu";
};

std::vector<long> golden_txt(const fs::path& p) {
  std::vector<long> v;
  std::ifstream in(p);
  long x;
  while (in >> x) v.push_back(x);
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Golden keep lists, reproduced exactly (order included) through the CLI.

TEST_F(NmsFilterCli, RpnProposalsMatchGolden) {
  S3D_REQUIRE_DATA(csv, "detections/rpn_proposals_mmcv/proposals.csv");
  S3D_REQUIRE_DATA(golden, "detections/golden");
  struct Case {
    std::string args, file;
  };
  for (const Case& c : {Case{"--iou 0.7 --group-by level", "rpn_keep_iou0.7_per_level.txt"},
                        Case{"--iou 0.7", "rpn_keep_iou0.7_class_agnostic.txt"},
                        Case{"--iou 0.5 --group-by level", "rpn_keep_iou0.5_per_level.txt"}}) {
    SCOPED_TRACE(c.args);
    for (const auto& device : devices()) {
      device_ = device;
      Result r = run(c.args + " --emit indices -o - " + shell_quote(csv.string()));
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(numbers(r.out), golden_txt(golden / c.file)) << device;
    }
  }
  device_ = "cpu";
  // mmcv's own expected per-level result (the golden list is verified equal to it).
  S3D_REQUIRE_DATA(mmcv, "detections/rpn_proposals_mmcv/keep_expected_iou0.7_per_level.txt");
  EXPECT_EQ(numbers(run("--iou 0.7 --group-by level --emit indices -o - " + shell_quote(csv.string())).out),
            golden_txt(mmcv));
}

TEST_F(NmsFilterCli, CocoResultsMatchGoldenFromJsonAndCsv) {
  S3D_REQUIRE_DATA(data, "detections");
  struct Set {
    std::string golden;
    std::vector<std::string> inputs;
  };
  const std::vector<Set> sets{
      {"golden/fakebbox100_keep.json",
       {"coco_val2014_fake100/instances_val2014_fakebbox100_results.json",
        "coco_val2014_fake100/fakebbox100_xyxy.csv"}},
      {"golden/person4_keep.json",
       {"coco_val2017_person4/test_coco_det_AP_H_56.json", "coco_val2017_person4/person_dets_xyxy.csv"}}};
  int compared = 0;
  for (const auto& set : sets) {
    const json golden = json::parse(slurp(data / set.golden));
    for (auto it = golden.begin(); it != golden.end(); ++it) {
      if (it.key() == "_doc") continue;
      const std::string iou = it.key().substr(3, 3);  // "iou0.5_..." -> "0.5"
      const bool per_class = it.key().find("per_class") != std::string::npos;
      for (const auto& input : set.inputs) {
        for (const auto& device : devices()) {
          SCOPED_TRACE(set.golden + " " + it.key() + " " + input + " on " + device);
          device_ = device;
          Result r = run("--iou " + iou + (per_class ? " --per-class" : "") + " --emit indices -o - " +
                         shell_quote((data / input).string()));
          ASSERT_EQ(r.code, 0) << r.err;
          EXPECT_EQ(numbers(r.out), it.value().get<std::vector<long>>());
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 16);
}

TEST_F(NmsFilterCli, MotPerFrameMatchesGoldenInOneBatch) {
  S3D_REQUIRE_DATA(mot, "detections/mot15_frcnn_sort");
  S3D_REQUIRE_DATA(golden_path, "detections/golden/mot15_keep_iou0.2_per_frame.json");
  const json golden = json::parse(slurp(golden_path));
  std::string inputs;
  for (auto it = golden.begin(); it != golden.end(); ++it)
    if (it.key() != "_doc") inputs += " " + shell_quote((mot / (it.key() + ".det.txt")).string());
  if (devices().size() > 1) {  // the GPU gives the same keep lists
    device_ = "cuda";
    Result g = run("--iou 0.2 --emit indices -o " + shell_quote((dir_ / "gpu_{/.}.keep").string()) + inputs);
    ASSERT_EQ(g.code, 0) << g.err;
    for (auto it = golden.begin(); it != golden.end(); ++it)
      if (it.key() != "_doc")
        EXPECT_EQ(numbers(slurp(dir_ / ("gpu_" + it.key() + ".det.keep"))), it.value().get<std::vector<long>>());
    device_ = "cpu";
  }
  Result r = run("--iou 0.2 --emit indices --json -o " + shell_quote((dir_ / "{/.}.keep").string()) + inputs);
  ASSERT_EQ(r.code, 0) << r.err;
  std::size_t kept = 0;
  for (auto it = golden.begin(); it != golden.end(); ++it) {
    if (it.key() == "_doc") continue;
    EXPECT_EQ(numbers(slurp(dir_ / (it.key() + ".det.keep"))), it.value().get<std::vector<long>>()) << it.key();
    kept += it.value().size();
  }
  const auto records = json_lines(r.out);
  ASSERT_EQ(records.size(), 12u);
  const json& summary = records.back();
  EXPECT_EQ(summary["type"], "summary");
  EXPECT_EQ(summary["boxes_in"], 35147);
  EXPECT_EQ(summary["boxes_kept"], kept);
  EXPECT_EQ(summary["groups"], 5444);  // one group per frame
  // The wall clock of this batch is bench_nms_filter_cli's (tests/bench), not a bound here.
}

// ---------------------------------------------------------------------------------------------------------
// Records output: the input's format, every field kept, input order, equal to the emitted indices.

TEST_F(NmsFilterCli, RecordsEqualTheIndicesAndKeepEveryField) {
  S3D_REQUIRE_DATA(coco, "detections/coco_val2017_person4/test_coco_det_AP_H_56.json");
  const std::string kept = (dir_ / "kept.json").string();
  Result r = run("--iou 0.5 --json -o " + shell_quote(kept) + " " + shell_quote(coco.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  Result idx = run("--iou 0.5 --emit indices -o - " + shell_quote(coco.string()));
  ASSERT_EQ(idx.code, 0) << idx.err;
  std::vector<long> indices = numbers(idx.out);
  ASSERT_EQ(indices.size(), 53u);
  std::sort(indices.begin(), indices.end());
  const json in = json::parse(slurp(coco));
  const json out = json::parse(slurp(kept));
  ASSERT_EQ(out.size(), indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) EXPECT_EQ(out[k], in[static_cast<std::size_t>(indices[k])]) << k;
  // The JSON record of the item.
  const auto records = json_lines(r.out);
  ASSERT_EQ(records.size(), 2u);
  const json& item = records[0];
  EXPECT_EQ(item["status"], "ok");
  EXPECT_EQ(item["boxes_in"], 118);
  EXPECT_EQ(item["boxes_kept"], 53);
  EXPECT_EQ(item["dropped_invalid"], 0);
  EXPECT_EQ(item["device"], "cpu");
  EXPECT_EQ(item["format"], "coco");
  EXPECT_TRUE(item["seconds"].is_number());
  EXPECT_EQ(item["group_by"], json::array({"image_id"}));
}

TEST_F(NmsFilterCli, CsvAndMotOutputsAreTheKeptLinesVerbatim) {
  S3D_REQUIRE_DATA(mot, "detections/mot15_frcnn_sort/TUD-Campus.det.txt");
  const std::string out = (dir_ / "out.det.txt").string();
  ASSERT_EQ(run("--iou 0.2 -o " + shell_quote(out) + " " + shell_quote(mot.string())).code, 0);
  std::vector<long> idx = numbers(run("--iou 0.2 --emit indices -o - " + shell_quote(mot.string())).out);
  std::sort(idx.begin(), idx.end());
  std::istringstream in(slurp(mot));
  std::vector<std::string> input_lines;
  for (std::string l; std::getline(in, l);) input_lines.push_back(l);
  std::string expected;
  for (long i : idx) expected += input_lines[static_cast<std::size_t>(i)] + "\n";
  EXPECT_EQ(slurp(out), expected);
  EXPECT_EQ(lines(expected), 285u);
}

TEST_F(NmsFilterCli, VocFolderInFolderOut) {
  S3D_REQUIRE_DATA(voc, "detections/voc2007_cartucho/detection-results");
  const fs::path out = dir_ / "nms";
  Result r = run("--iou 0.3 --per-class --json -o " + shell_quote(out.string()) + " " + shell_quote(voc.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  std::size_t files = 0, kept = 0;
  for (const auto& e : fs::directory_iterator(voc)) {
    ++files;
    const fs::path o = out / e.path().filename();
    ASSERT_TRUE(fs::exists(o)) << o;  // every image keeps its file, even when empty
    const std::string text = slurp(o);
    kept += lines(text);
    // Each kept line is a line of the input file.
    const std::string original = slurp(e.path());
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) EXPECT_NE(original.find(l), std::string::npos) << l;
  }
  EXPECT_EQ(files, 85u);
  const auto records = json_lines(r.out);
  EXPECT_EQ(records[0]["boxes_kept"], kept);
  EXPECT_LT(kept, 494u);
  // --emit indices counts the same boxes; positions run over the files in name order.
  Result idx = run("--iou 0.3 --per-class --emit indices -o - " + shell_quote(voc.string()));
  EXPECT_EQ(numbers(idx.out).size(), kept);
  // A folder cannot go to stdout.
  Result bad = run("--iou 0.3 -o - " + shell_quote(voc.string()));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("folder"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------
// Pipes.

TEST_F(NmsFilterCli, StdinToStdoutEqualsFileToFile) {
  S3D_REQUIRE_DATA(mot, "detections/mot15_frcnn_sort/KITTI-17.det.txt");
  const std::string file_out = (dir_ / "k.det.txt").string();
  ASSERT_EQ(run("--iou 0.2 -o " + shell_quote(file_out) + " " + shell_quote(mot.string())).code, 0);
  Result piped = run("--format mot --iou 0.2 - -o -", "cat " + shell_quote(mot.string()) + " | ");
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.out, slurp(file_out));
  EXPECT_EQ(lines(piped.out), 554u);
  // Without --format the content tells (commas and numbers: MOT).
  Result sniffed = run("--iou 0.2 - -o -", "cat " + shell_quote(mot.string()) + " | ");
  EXPECT_EQ(sniffed.out, piped.out);
  // JSON through a pipe too.
  S3D_REQUIRE_DATA(coco, "detections/coco_val2017_person4/test_coco_det_AP_H_56.json");
  Result j = run("--iou 0.5 --emit indices - -o -", "cat " + shell_quote(coco.string()) + " | ");
  EXPECT_EQ(numbers(j.out).size(), 53u);
}

// ---------------------------------------------------------------------------------------------------------
// Bad input: exit 1, one stderr line naming the file and record, no output file.

TEST_F(NmsFilterCli, BadInputFailsWithOneLineAndNoOutput) {
  const std::string in = write("bad.csv", "x1,y1,x2,y2,score\n0,0,10,10,0.9\n1,1,11,11,nan\n50,50,60,60,0.7\n");
  const std::string out = (dir_ / "kept.csv").string();
  Result r = run("--iou 0.5 -o " + shell_quote(out) + " " + shell_quote(in));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("bad.csv: line 3: score is NaN"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("nms-filter: ", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(files_in_dir(), std::vector<std::string>{"bad.csv"});  // no temp file left behind
  // The same through stdin names <stdin>.
  Result s = run("--iou 0.5 --format csv - -o -", "cat " + shell_quote(in) + " | ");
  EXPECT_EQ(s.code, 1);
  EXPECT_TRUE(s.out.empty());
  EXPECT_NE(s.err.find("<stdin>: line 3: score is NaN"), std::string::npos) << s.err;
  // Other bad inputs: a string score in JSON, an infinite MOT coordinate, a missing field.
  for (const auto& [name, text, what] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"b.json", "[{\"bbox\":[0,0,1,1],\"score\":\"high\"}]", "b.json: record 1 (line 1): score is not a number"},
           {"c.det.txt", "1,-1,0,0,1,1,0.9\n2,-1,inf,0,1,1,0.9\n", "c.det.txt: line 2: bb_left is infinite"},
           {"d.jsonl", "{\"bbox\":[0,0,1,1],\"score\":1}\n{\"bbox\":[0,0,1,1]}\n",
            "d.jsonl: line 2: score is missing"}}) {
    const std::string p = write(name, text);
    Result b = run("-o " + shell_quote((dir_ / ("out_" + name)).string()) + " " + shell_quote(p));
    EXPECT_EQ(b.code, 1) << name;
    EXPECT_EQ(lines(b.err), 1u) << b.err;
    EXPECT_NE(b.err.find(what), std::string::npos) << b.err;
    EXPECT_FALSE(fs::exists(dir_ / ("out_" + name)));
  }
  // A batch goes on after the bad file and still exits 1.
  const std::string good = write("good.csv", "x1,y1,x2,y2,score\n0,0,10,10,0.9\n");
  Result batch = run("--json --output-dir " + shell_quote((dir_ / "o").string()) + " " + shell_quote(in) + " " +
                     shell_quote(good));
  EXPECT_EQ(batch.code, 1);
  EXPECT_TRUE(fs::exists(dir_ / "o" / "good.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "o" / "bad.csv"));
}

TEST_F(NmsFilterCli, DropInvalidSkipsAndCounts) {
  const std::string in = write("bad.csv",
                               "x1,y1,x2,y2,score\n0,0,10,10,0.9\n1,1,11,11,nan\n0,0,10,11,0.8\n"
                               "50,50,60,60,0.7\n5,5,inf,6,0.1\n");
  Result r = run("--drop-invalid --iou 0.5 --json --emit indices -o " + shell_quote((dir_ / "k.txt").string()) + " " +
                 shell_quote(in));
  ASSERT_EQ(r.code, 0) << r.err;
  // Line 4 (position 2) overlaps the first box (IoU 100/110); positions count the dropped records.
  EXPECT_EQ(numbers(slurp(dir_ / "k.txt")), (std::vector<long>{0, 3}));
  const auto records = json_lines(r.out);
  EXPECT_EQ(records[0]["dropped_invalid"], 2);
  EXPECT_EQ(records[0]["boxes_in"], 5);
  EXPECT_EQ(records.back()["dropped_invalid"], 2);
  EXPECT_EQ(records.back()["boxes_kept"], 2);
}

TEST_F(NmsFilterCli, UsageErrorsExitTwo) {
  const std::string in = write("a.csv", "x1,y1,x2,y2,score\n0,0,1,1,0.5\n");
  EXPECT_EQ(run("--iou 1.5 -o - " + shell_quote(in)).code, 2);
  EXPECT_EQ(run("--method fancy -o - " + shell_quote(in)).code, 2);
  EXPECT_EQ(run("--sigma 0 --method soft-gaussian -o - " + shell_quote(in)).code, 2);
  EXPECT_EQ(run("--box-format xyxy=a,b -o - " + shell_quote(in)).code, 2);
  EXPECT_EQ(run("--format xml -o - " + shell_quote(in)).code, 2);
  Result no_out = run(shell_quote(in));
  EXPECT_EQ(no_out.code, 2);
  EXPECT_NE(no_out.err.find("no output"), std::string::npos);
  // The output must be the input's format.
  Result wrong = run("-o " + shell_quote((dir_ / "x.json").string()) + " " + shell_quote(in));
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("writes the input's format"), std::string::npos) << wrong.err;
  Result help = run("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("Examples:"), std::string::npos);
  EXPECT_NE(help.out.find("--group-by"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------
// Every flag has an observable effect.

TEST_F(NmsFilterCli, IouGeSuppressesAtExactlyTheThreshold) {
  // IoU([0,0,3,1], [1,0,4,1]) = 2 / 4 = 0.5 exactly.
  const std::string in = write("t.csv", "x1,y1,x2,y2,score\n0,0,3,1,0.9\n1,0,4,1,0.8\n");
  EXPECT_EQ(numbers(run("--iou 0.5 --emit indices -o - " + shell_quote(in)).out), (std::vector<long>{0, 1}));
  EXPECT_EQ(numbers(run("--iou 0.5 --iou-ge --emit indices -o - " + shell_quote(in)).out), (std::vector<long>{0}));
}

TEST_F(NmsFilterCli, PixelOffsetOneUsesLegacyAreas) {
  // Touching unit boxes: IoU 0 without +1; with +1, inter 1*2 = 2 over 4 + 4 - 2 -> 1/3.
  const std::string in = write("t.csv", "x1,y1,x2,y2,score\n0,0,1,1,0.9\n1,0,2,1,0.8\n");
  EXPECT_EQ(numbers(run("--iou 0.3 --emit indices -o - " + shell_quote(in)).out), (std::vector<long>{0, 1}));
  EXPECT_EQ(numbers(run("--iou 0.3 --pixel-offset 1 --emit indices -o - " + shell_quote(in)).out),
            (std::vector<long>{0}));
}

TEST_F(NmsFilterCli, GroupingDefaultsAndFlags) {
  // Two images, two classes, four identical boxes.
  const std::string in = write("g.csv",
                               "image_id,category_id,x1,y1,x2,y2,score\n"
                               "1,1,0,0,10,10,0.9\n1,2,0,0,10,10,0.8\n2,1,0,0,10,10,0.7\n2,2,0,0,10,10,0.6\n");
  auto keep = [&](const std::string& flags) {
    return numbers(run(flags + " --emit indices -o - " + shell_quote(in)).out);
  };
  EXPECT_EQ(keep(""), (std::vector<long>{0, 2}));                   // default: per image
  EXPECT_EQ(keep("--per-class"), (std::vector<long>{0, 1, 2, 3}));  // per image x class
  EXPECT_EQ(keep("--group-by none"), (std::vector<long>{0}));       // one group
  EXPECT_EQ(keep("--group-by category_id"), (std::vector<long>{0, 1}));
  EXPECT_EQ(keep("--group-by none --per-class"), (std::vector<long>{0, 1}));
  EXPECT_EQ(keep("--group-by image_id,category_id"), (std::vector<long>{0, 1, 2, 3}));
  Result bad = run("--group-by camera --emit indices -o - " + shell_quote(in));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("no column 'camera'"), std::string::npos) << bad.err;
  const std::string noclass = write("n.csv", "x1,y1,x2,y2,score\n0,0,1,1,0.5\n");
  Result pc = run("--per-class --emit indices -o - " + shell_quote(noclass));
  EXPECT_EQ(pc.code, 1);
  EXPECT_NE(pc.err.find("no class field"), std::string::npos) << pc.err;
}

TEST_F(NmsFilterCli, ScoreAndCountLimits) {
  S3D_REQUIRE_DATA(coco, "detections/coco_val2017_person4/test_coco_det_AP_H_56.json");
  const std::string f = shell_quote(coco.string());
  const json in = json::parse(slurp(coco));
  auto kept = [&](const std::string& flags) {
    return numbers(run("--iou 0.5 " + flags + " --emit indices -o - " + f).out);
  };
  const auto base = kept("");
  ASSERT_EQ(base.size(), 53u);
  // --min-score: fewer, all at or above it.
  const auto ms = kept("--min-score 0.5");
  EXPECT_LT(ms.size(), base.size());
  for (long i : ms) EXPECT_GE(in[static_cast<std::size_t>(i)]["score"].get<double>(), 0.5);
  // --max-dets: at most N per image (4 images), the best of each image's survivors.
  const auto md = kept("--max-dets 2");
  EXPECT_EQ(md.size(), 8u);
  // --pre-top-k 1 per group (= per image): exactly one box per image survives.
  const auto tk = kept("--pre-top-k 1");
  EXPECT_EQ(tk.size(), 4u);
  std::set<long> images;
  for (long i : tk) images.insert(in[static_cast<std::size_t>(i)]["image_id"].get<long>());
  EXPECT_EQ(images.size(), 4u);
}

TEST_F(NmsFilterCli, SoftNmsRewritesScores) {
  const std::string in = write("s.csv", "x1,y1,x2,y2,score,tag\n0,0,10,10,0.9,a\n1,0,11,10,0.8,b\n30,30,40,40,0.7,c\n");
  Result hard = run("--iou 0.5 -o - " + shell_quote(in));
  EXPECT_EQ(hard.out, "x1,y1,x2,y2,score,tag\n0,0,10,10,0.9,a\n30,30,40,40,0.7,c\n");
  // Linear: IoU = 90/110 > 0.5 -> 0.8 * (1 - 9/11).
  Result lin = run("--method soft-linear --iou 0.5 -o - " + shell_quote(in));
  ASSERT_EQ(lin.code, 0) << lin.err;
  auto t = s3d::io::read_boxes_from_string(lin.out, s3d::io::BoxFileFormat::kCsv, {});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_NEAR(t.scores[1], 0.8 * (1 - 90.0 / 110.0), 1e-6);
  EXPECT_EQ(t.scores[0], 0.9);  // undecayed scores keep their text
  EXPECT_NE(lin.out.find(",b\n"), std::string::npos);
  // Gaussian: exp(-IoU^2 / sigma); sigma changes the result.
  Result g1 = run("--method soft-gaussian --sigma 0.5 -o - " + shell_quote(in));
  Result g2 = run("--method soft-gaussian --sigma 2 -o - " + shell_quote(in));
  auto a = s3d::io::read_boxes_from_string(g1.out, s3d::io::BoxFileFormat::kCsv, {});
  auto b = s3d::io::read_boxes_from_string(g2.out, s3d::io::BoxFileFormat::kCsv, {});
  const double iou = 90.0 / 110.0;
  EXPECT_NEAR(a.scores[1], 0.8 * std::exp(-iou * iou / 0.5), 1e-6);
  EXPECT_NEAR(b.scores[1], 0.8 * std::exp(-iou * iou / 2.0), 1e-6);
  // --min-score also floors decayed scores: 0.8 * 0.2622 = 0.21 < 0.3 is dropped.
  Result floor = run("--method soft-gaussian --sigma 0.5 --min-score 0.3 --emit indices -o - " + shell_quote(in));
  EXPECT_EQ(numbers(floor.out), (std::vector<long>{0, 2}));
}

TEST_F(NmsFilterCli, RotatedBoxesUsePolygonIoU) {
  // Same centre: a 2x2 square at 0 rad and at pi/4 overlap with IoU 8(sqrt2-1) / (8 - 8(sqrt2-1)) = 0.7071.
  const std::string in = write("r.csv", "cx,cy,w,h,angle,score\n5,5,2,2,0,0.9\n5,5,2,2,0.7853981633974483,0.8\n");
  EXPECT_EQ(numbers(run("--rotated --iou 0.70 --emit indices -o - " + shell_quote(in)).out), (std::vector<long>{0}));
  EXPECT_EQ(numbers(run("--rotated --iou 0.72 --emit indices -o - " + shell_quote(in)).out), (std::vector<long>{0, 1}));
  // Without --rotated, an angle column is an error (not silently ignored).
  Result forgot = run("--emit indices -o - " + shell_quote(in));
  EXPECT_EQ(forgot.code, 1);
  EXPECT_NE(forgot.err.find("give --rotated"), std::string::npos) << forgot.err;
  // Read as axis-aligned cx,cy,w,h the two boxes are identical and always suppress.
  EXPECT_EQ(numbers(run("--box-format cxcywh --iou 0.72 --emit indices -o - " + shell_quote(in)).out),
            (std::vector<long>{0}));
}

TEST_F(NmsFilterCli, BoxFormatChoosesTheEncoding) {
  // Columns x,y,w,h. As xywh (found by name): [0,0,10,10] and [6,0,16,10], IoU 40/160 = 0.25, both kept at 0.3.
  // As xyxy=x,y,w,h: [0,0,10,10] and [6,0,10,10], IoU 40/100 = 0.4, the second is suppressed.
  // As cxcywh: both shift by half their size, IoU stays 0.25.
  const std::string in = write("b.csv", "x,y,w,h,score\n0,0,10,10,0.9\n6,0,10,10,0.8\n");
  auto keep = [&](const std::string& flags) {
    return numbers(run("--iou 0.3 " + flags + " --emit indices -o - " + shell_quote(in)).out);
  };
  EXPECT_EQ(keep(""), (std::vector<long>{0, 1}));
  EXPECT_EQ(keep("--box-format xywh"), (std::vector<long>{0, 1}));
  EXPECT_EQ(keep("--box-format xyxy=x,y,w,h"), (std::vector<long>{0}));
  EXPECT_EQ(keep("--box-format cxcywh=x,y,w,h"), (std::vector<long>{0, 1}));
  // xyxy by name finds no x1,y1,x2,y2 columns: a file error.
  EXPECT_EQ(run("--box-format xyxy --emit indices -o - " + shell_quote(in)).code, 1);
}

TEST_F(NmsFilterCli, FormatFlagOverridesTheExtension) {
  S3D_REQUIRE_DATA(mot, "detections/mot15_frcnn_sort/KITTI-17.det.txt");
  // A MOT file under a .csv name: read as CSV it has no header names; --format mot reads it.
  const std::string copy = write("k.csv", slurp(mot));
  EXPECT_EQ(run("--iou 0.2 --emit indices -o - " + shell_quote(copy)).code, 1);
  Result r = run("--format mot --iou 0.2 --emit indices -o - " + shell_quote(copy));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(numbers(r.out).size(), 554u);
}
