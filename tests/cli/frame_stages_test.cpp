// The frame's staged items (Tool::run with Stages, and the scheduler under it): input order, bounded
// items in flight, skips, per-item failures in every stage, --fail-fast, and the handler's look at the
// next item, with fake loaders, handlers and writers that sleep at random.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "concurrency_support.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::cli {
namespace {

using test::InFlight;
using test::sleep_random_us;

// Tool::run with Stages over text files: load reads, handle upper-cases, write writes `OUT/<name>.up`.
// Markers in a file fail the stage they name: BADLOAD, BADHANDLE, BADWRITE.
class StagedTool : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d-stages-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string input(int k) const {
    char name[32];
    std::snprintf(name, sizeof name, "f%03d.txt", k);
    return (dir_ / "in" / name).string();
  }
  void make_inputs(int n, const std::map<int, std::string>& markers = {}) {
    for (int k = 0; k < n; ++k) {
      auto it = markers.find(k);
      std::ofstream(input(k)) << "item " << k << (it == markers.end() ? "" : " " + it->second) << "\n";
    }
  }
  std::string output(int k) const { return (dir_ / "out" / (fs::path(input(k)).stem().string() + ".up")).string(); }

  struct Loaded {
    std::string text;
    std::size_t index = 0;
  };
  struct Handled {
    std::string text;
  };

  // Runs the tool over inputs 0..n-1 with `extra` flags; returns the records of --report.
  std::vector<nlohmann::json> run(int n, std::vector<std::string> extra) {
    Tool tool("stages-test", "test tool", ItemSpec{1, {"input"}});
    tool.outputs_of([this](const Item& item, ItemContext&) {
      return std::vector<std::string>{(dir_ / "out" / (fs::path(item.inputs[0]).stem().string() + ".up")).string()};
    });
    const auto caller = std::this_thread::get_id();
    Stages<Loaded, Handled> stages;
    stages.load = [&](const Item& item, ItemContext& ctx) {
      flight_.enter();
      std::lock_guard<std::mutex> lock(mutex_);
      loaded_.insert(item.index);
      std::ifstream in(ctx.readable_path(item.inputs[0]));
      Loaded l{std::string(std::istreambuf_iterator<char>(in), {}), item.index};
      if (l.text.find("BADLOAD") != std::string::npos) {
        flight_.leave();
        throw DataError("cannot decode (BADLOAD)");
      }
      return l;
    };
    stages.handle = [&](const Item& item, Loaded& in, ItemContext& ctx, NextItem<Loaded> next) {
      sleep_random_us(400);
      EXPECT_EQ(std::this_thread::get_id(), caller);
      EXPECT_EQ(in.index, item.index);
      if (!expected_next_.empty()) EXPECT_EQ(expected_next_, item.inputs[0]) << "a next item that did not come next";
      expected_next_.clear();
      if (next.item) {
        EXPECT_EQ(next.input->index, next.item->index);
        expected_next_ = next.item->inputs[0];
        ++peeks_;
      }
      handled_.push_back(item.index);
      ctx.add_stage_seconds("compute", 0.001);
      if (in.text.find("BADHANDLE") != std::string::npos) {
        flight_.leave();
        throw DataError("cannot match (BADHANDLE)");
      }
      std::string up = in.text;
      std::transform(up.begin(), up.end(), up.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      return Handled{up};
    };
    if (group_ > 1) {
      // This item and loaded items after it, up to group_ in all, stopping before one marked ALONE.
      tool.handle_groups_of(group_);
      stages.handle_group = [&](const Item& item, Loaded& in, ItemContext&, NextItem<Loaded> next) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        std::vector<Loaded*> taken{&in};
        for (const auto& [ahead_item, ahead_input] : next.ahead) {
          if (taken.size() == group_ || ahead_input->text.find("ALONE") != std::string::npos) break;
          EXPECT_EQ(ahead_input->index, ahead_item->index);
          taken.push_back(ahead_input);
        }
        std::vector<std::size_t> indices;
        std::vector<Handled> out;
        for (Loaded* l : taken) {
          indices.push_back(l->index);
          std::string up = l->text;
          std::transform(up.begin(), up.end(), up.begin(),
                         [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
          out.push_back(Handled{up});
        }
        groups_.push_back(indices);
        if (in.text.find("BADHANDLE") != std::string::npos) throw DataError("cannot match (BADHANDLE)");
        return out;
      };
    }
    stages.write = [&](const Item& item, Handled& h, ItemContext& ctx) {
      struct Leave {
        InFlight& f;
        ~Leave() { f.leave(); }
      } leave{flight_};
      sleep_random_us(3000);
      const std::string out = ctx.output_path(0, ".up");
      ctx.write_atomically((dir_ / "out" / (fs::path(item.inputs[0]).stem().string() + ".up")).string(),
                           [&](const std::string& tmp) {
                             std::ofstream o(tmp);
                             o << h.text.substr(0, 3) << std::flush;
                             if (h.text.find("BADWRITE") != std::string::npos) throw IoError(tmp + ": disk full");
                             o << h.text.substr(3);
                           });
      (void)out;
      return nlohmann::json{{"chars", h.text.size()}};
    };
    const std::string report = (dir_ / "report.jsonl").string();
    std::vector<std::string> args{"stages-test", "--device", "cpu", "--report", report, "-q", "--progress", "never"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (int k = 0; k < n; ++k) args.push_back(input(k));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    exit_code_ = tool.run(static_cast<int>(argv.size()), argv.data(), std::move(stages));
    std::vector<nlohmann::json> records;
    std::ifstream in(report);
    for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
    return records;
  }

  std::vector<std::string> temps() const {
    std::vector<std::string> found;
    if (!fs::exists(dir_ / "out")) return found;
    for (const auto& e : fs::directory_iterator(dir_ / "out"))
      if (e.path().filename().string().find(".s3d-tmp.") != std::string::npos) found.push_back(e.path().string());
    return found;
  }

  fs::path dir_;
  InFlight flight_;
  std::mutex mutex_;
  std::set<std::size_t> loaded_;
  std::vector<std::size_t> handled_;
  std::string expected_next_;
  int peeks_ = 0;
  std::size_t group_ = 0;                         ///< > 1: a group handler takes up to this many items
  std::vector<std::vector<std::size_t>> groups_;  ///< the items each group call took
  int exit_code_ = -1;
};

TEST_F(StagedTool, RecordsInInputOrderAndFailuresOfEveryStage) {
  make_inputs(24, {{3, "BADLOAD"}, {7, "BADHANDLE"}, {11, "BADWRITE"}});
  const auto records = run(24, {"--output-dir", (dir_ / "out").string(), "--prefetch", "4", "--threads", "3"});
  EXPECT_EQ(exit_code_, kExitItemFailed);
  ASSERT_EQ(records.size(), 25u);
  for (int k = 0; k < 24; ++k) {
    const auto& r = records[static_cast<std::size_t>(k)];
    EXPECT_EQ(r["index"], k);
    const bool bad = k == 3 || k == 7 || k == 11;
    EXPECT_EQ(r["status"], bad ? "failed" : "ok") << k;
    EXPECT_EQ(fs::exists(output(k)), !bad) << k;
    if (!bad) {
      EXPECT_EQ(r["chars"], std::string("ITEM " + std::to_string(k) + "\n").size());
      EXPECT_DOUBLE_EQ(r["stage_seconds"]["compute"].get<double>(), 0.001);
    }
  }
  EXPECT_NE(records[3]["error"].get<std::string>().find("BADLOAD"), std::string::npos);
  EXPECT_NE(records[7]["error"].get<std::string>().find("BADHANDLE"), std::string::npos);
  EXPECT_NE(records[11]["error"].get<std::string>().find("disk full"), std::string::npos);
  const auto& summary = records.back();
  EXPECT_EQ(summary["type"], "summary");
  EXPECT_EQ((std::vector<int>{summary["ok"], summary["failed"], summary["not_run"]}), (std::vector<int>{21, 3, 0}));
  EXPECT_EQ(summary["workers"], 3);
  EXPECT_EQ(summary["prefetch"], 4);
  EXPECT_NEAR(summary["stage_seconds"]["compute"].get<double>(), 0.021, 1e-9);
  // The handler ran once per loaded item, in order, never for the item whose load failed.
  std::vector<std::size_t> want;
  for (std::size_t k = 0; k < 24; ++k)
    if (k != 3) want.push_back(k);
  EXPECT_EQ(handled_, want);
  EXPECT_LE(flight_.most.load(), 4);
  EXPECT_GT(peeks_, 0);  // loads ran ahead far enough for the handler to see its next item
  EXPECT_EQ(temps(), std::vector<std::string>{});
}

TEST_F(StagedTool, AGroupHandlerTakesLaterItemsWhoseOutputsReachTheirOwnRecords) {
  make_inputs(11, {{5, "ALONE"}, {8, "BADHANDLE"}, {9, "BADLOAD"}});
  group_ = 3;
  const auto records = run(11, {"--output-dir", (dir_ / "out").string(), "--prefetch", "8", "--threads", "2"});
  EXPECT_EQ(exit_code_, kExitItemFailed);
  ASSERT_EQ(records.size(), 12u);
  // Every item taken once, in order: a group stops before ALONE, at a failed load, and at three items.
  std::vector<std::size_t> taken;
  for (const auto& g : groups_) taken.insert(taken.end(), g.begin(), g.end());
  EXPECT_EQ(taken, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 10}));
  EXPECT_EQ(groups_[0], (std::vector<std::size_t>{0, 1, 2}));
  for (const auto& g : groups_) {
    EXPECT_LE(g.size(), 3u);
    for (std::size_t i = 1; i < g.size(); ++i) EXPECT_NE(g[i], 5u) << "ALONE joined a group";
  }
  for (int k = 0; k < 11; ++k) {
    const auto& r = records[static_cast<std::size_t>(k)];
    EXPECT_EQ(r["index"], k);
    const bool bad = k == 8 || k == 9;
    EXPECT_EQ(r["status"], bad ? "failed" : "ok") << k;
    EXPECT_EQ(fs::exists(output(k)), !bad) << k;
    if (bad) continue;
    std::ifstream in(output(k));
    const std::string text(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(text.rfind("ITEM " + std::to_string(k), 0), 0u) << text;  // its own output, not a neighbour's
  }
  EXPECT_NE(records[8]["error"].get<std::string>().find("BADHANDLE"), std::string::npos);
  EXPECT_EQ(temps(), std::vector<std::string>{});
}

TEST_F(StagedTool, AGroupThatFailsFailsItsFirstItemOnlyAndTheOthersAreHandledAgain) {
  make_inputs(7, {{3, "BADHANDLE"}, {5, "ALONE"}});
  group_ = 3;
  const auto records = run(7, {"--output-dir", (dir_ / "out").string(), "--prefetch", "8", "--threads", "2"});
  EXPECT_EQ(exit_code_, kExitItemFailed);
  // The group at 3 (3, 4) throws: 3 fails, 4 gets its own call (ALONE ends both groups before 5).
  EXPECT_EQ(groups_, (std::vector<std::vector<std::size_t>>{{0, 1, 2}, {3, 4}, {4}, {5, 6}}));
  ASSERT_EQ(records.size(), 8u);
  for (int k = 0; k < 7; ++k) {
    EXPECT_EQ(records[static_cast<std::size_t>(k)]["status"], k == 3 ? "failed" : "ok") << k;
    EXPECT_EQ(fs::exists(output(k)), k != 3) << k;
  }
}

TEST_F(StagedTool, SkippedItemsAreNeverLoaded) {
  make_inputs(6);
  fs::create_directories(dir_ / "out");
  std::ofstream(output(2)) << "earlier run\n";
  const auto records = run(6, {"--output-dir", (dir_ / "out").string(), "--skip-existing", "--prefetch", "3"});
  EXPECT_EQ(exit_code_, kExitOk);
  ASSERT_EQ(records.size(), 7u);
  EXPECT_EQ(records[2]["status"], "skipped");
  EXPECT_EQ(loaded_.count(2), 0u);
  EXPECT_EQ(handled_, (std::vector<std::size_t>{0, 1, 3, 4, 5}));
  std::ifstream kept(output(2));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "earlier run\n");
  // Without --skip-existing or --overwrite, the existing output fails its item only.
  const auto again = run(6, {"--output-dir", (dir_ / "out").string(), "--prefetch", "2"});
  EXPECT_EQ(exit_code_, kExitItemFailed);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(again[static_cast<std::size_t>(k)]["status"], "failed");
}

TEST_F(StagedTool, FailFastStopsAtTheFirstFailedItemInOrder) {
  make_inputs(20, {{4, "BADLOAD"}});
  const auto records =
      run(20, {"--output-dir", (dir_ / "out").string(), "--fail-fast", "--prefetch", "6", "--threads", "2"});
  EXPECT_EQ(exit_code_, kExitItemFailed);
  ASSERT_EQ(records.size(), 6u);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(records[static_cast<std::size_t>(k)]["status"], "ok");
  EXPECT_EQ(records[4]["status"], "failed");
  EXPECT_EQ(records[5]["not_run"], 15);
  EXPECT_EQ(handled_, (std::vector<std::size_t>{0, 1, 2, 3}));
  for (int k = 5; k < 20; ++k) EXPECT_FALSE(fs::exists(output(k))) << k;
}

TEST_F(StagedTool, PrefetchOneIsSequential) {
  make_inputs(8);
  const auto records = run(8, {"--output-dir", (dir_ / "out").string(), "--prefetch", "1"});
  EXPECT_EQ(exit_code_, kExitOk);
  EXPECT_EQ(flight_.most.load(), 1);
  EXPECT_EQ(peeks_, 0);
  EXPECT_EQ(records.back()["ok"], 8);
}

}  // namespace
}  // namespace s3d::cli
