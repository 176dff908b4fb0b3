// merge_reports (`TOOL report`): the --report files of a batch's shards and re-runs merged into one report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "s3d/cli/merge_reports.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::cli {
namespace {

using nlohmann::json;

class MergeReports : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("s3d-merge-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<json>& records, const std::string& tail = "") {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    for (const auto& r : records) out << r.dump() << "\n";
    out << tail;
    return path;
  }
  static json item(std::size_t index, const std::string& status, double value = 0.0) {
    json r{{"type", "item"}, {"index", index}, {"input", "in" + std::to_string(index)}, {"status", status}};
    if (status == "ok") r["value"] = value;
    if (status == "failed") r["error"] = "in" + std::to_string(index) + ": broken";
    return r;
  }
  static json summary(std::size_t total, int shard, int shards, const std::string& tool = "demo") {
    return json{{"type", "summary"},
                {"tool", tool},
                {"total_items", total},
                {"seconds", 1.5},
                {"shard", {{"index", shard}, {"count", shards}, {"source", "flag"}}},
                {"settings", {{"shard", std::to_string(shard) + "/" + std::to_string(shards)}, {"k", 3}}}};
  }
  std::filesystem::path dir_;
};

TEST_F(MergeReports, ShardsMergeIntoTheWholeBatchWithTheToolsAggregates) {
  const std::string a = write("a.jsonl", {item(0, "ok", 1.0), item(2, "failed"), summary(4, 0, 2)});
  const std::string b = write("b.jsonl", {item(1, "ok", 2.0), item(3, "skipped"), summary(4, 1, 2)});
  const MergedReport m = merge_reports({a, b}, "demo", {sum_of({"value"}, "totals")});
  ASSERT_EQ(m.items.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(m.items[i]["index"], i);  // by index, whatever the file order
  EXPECT_EQ(m.summary["ok"], 2);
  EXPECT_EQ(m.summary["failed"], 1);
  EXPECT_EQ(m.summary["skipped"], 1);
  EXPECT_EQ(m.summary["missing"], 0);
  EXPECT_EQ(m.summary["totals"]["value"], 3.0);
  EXPECT_EQ(m.summary["failures"], json::parse(R"([{"index":2,"input":"in2","error":"in2: broken"}])"));
  EXPECT_EQ(m.summary["seconds_sum"], 3.0);
  EXPECT_EQ(m.summary["settings"], json::parse(R"({"k":3})"));  // the per-run settings left out
  EXPECT_FALSE(m.summary.contains("warnings"));
  EXPECT_EQ(m.exit_code, 1);  // a failed item
}

TEST_F(MergeReports, AResubmittedShardKeepsTheFirstAttemptsResults) {
  // Attempt 1 was cancelled after item 1 (no summary, a half-written last line); attempt 2 skipped item 1
  // (its output existed), redid the failed item 3 and did item 5.
  const std::string first =
      write("s1-a.jsonl", {item(1, "ok", 10.0), item(3, "failed")}, R"({"type":"item","index":5,"inp)");
  const std::string second =
      write("s1-b.jsonl", {item(1, "skipped"), item(3, "ok", 30.0), item(5, "ok", 50.0), summary(6, 1, 2)});
  const std::string other = write("s0.jsonl", {item(0, "ok"), item(2, "ok"), item(4, "ok"), summary(6, 0, 2)});
  for (const auto& order : {std::vector<std::string>{first, second, other}, {other, second, first}}) {
    const MergedReport m = merge_reports(order, "demo", {sum_of({"value"})});
    EXPECT_EQ(m.summary["ok"], 6);
    EXPECT_EQ(m.summary["failed"], 0);
    EXPECT_EQ(m.summary["skipped"], 0);
    EXPECT_EQ(m.summary["value"], 90.0);  // ok over failed over skipped, in either order
    EXPECT_EQ(m.exit_code, 0);
    ASSERT_TRUE(m.summary.contains("warnings"));
    EXPECT_EQ(m.summary["warnings"].size(), 2u);  // the incomplete line, the missing summary
  }
}

// An interrupted item's record (a partial trajectory) is not done: any complete record of the item wins, and
// alone it is counted apart, stays out of the aggregates and fails the merge.
TEST_F(MergeReports, AnInterruptedRecordIsNotDone) {
  json partial = item(0, "interrupted");
  partial["value"] = 7.0;
  const std::string cut = write("cut.jsonl", {partial, item(1, "ok", 1.0), summary(2, 0, 1)});
  const std::string full = write("full.jsonl", {item(0, "ok", 5.0), item(1, "ok", 1.0), summary(2, 0, 1)});
  const std::string skip = write("skip.jsonl", {item(0, "skipped"), item(1, "skipped"), summary(2, 0, 1)});
  for (const auto& order : {std::vector<std::string>{cut, full}, {full, cut}}) {
    const MergedReport m = merge_reports(order, "demo", {sum_of({"value"})});
    EXPECT_EQ(m.summary["ok"], 2);
    EXPECT_EQ(m.summary["interrupted"], 0);
    EXPECT_EQ(m.summary["value"], 6.0);  // the complete record's, not the partial one's
    EXPECT_EQ(m.exit_code, 0);
  }
  const MergedReport skipped = merge_reports({cut, skip}, "demo", {sum_of({"value"})});
  EXPECT_EQ(skipped.items[0]["status"], "skipped");  // its outputs were complete when skipped
  const MergedReport alone = merge_reports({cut}, "demo", {sum_of({"value"})});
  EXPECT_EQ(alone.summary["ok"], 1);
  EXPECT_EQ(alone.summary["interrupted"], 1);
  EXPECT_EQ(alone.summary["skipped"], 0);
  EXPECT_EQ(alone.summary["value"], 1.0);
  EXPECT_EQ(alone.exit_code, 1);
  ASSERT_TRUE(alone.summary.contains("warnings"));
  EXPECT_NE(alone.summary["warnings"].dump().find("interrupted"), std::string::npos);
}

// A run aggregates its records as the tool made them (signed int64 counts); the merge, as parsed from the
// report (unsigned): the sums must come out as the same JSON.
TEST(SumOf, IntegersSumAsIntegersWhateverTheirSignedness) {
  const std::vector<json> made{json{{"n", std::int64_t{2}}, {"x", 0.5}}, json{{"n", std::int64_t{40}}, {"x", 1}}};
  std::vector<json> parsed;
  for (const auto& r : made) parsed.push_back(json::parse(r.dump()));
  json a = json::object(), b = json::object();
  sum_of({"n", "x", "absent"})(made, a);
  sum_of({"n", "x", "absent"})(parsed, b);
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(a.dump(), R"({"n":42,"x":1.5})");
  json c = json::object();
  sum_of({"n", "absent"}, "totals", true)({}, c);  // `always`: zeros for a batch without ok items
  EXPECT_EQ(c.dump(), R"({"totals":{"absent":0,"n":0}})");
}

TEST_F(MergeReports, ItemsInNoReportAreMissing) {
  const std::string a = write("a.jsonl", {item(0, "ok"), item(3, "ok"), summary(5, 0, 3)});
  const MergedReport m = merge_reports({a}, "demo", {});
  EXPECT_EQ(m.summary["missing"], 3);
  EXPECT_EQ(m.summary["missing_indexes"], json::parse("[1,2,4]"));
  EXPECT_EQ(m.exit_code, 1);
}

TEST_F(MergeReports, ReportsOfAnotherBatchOrToolAreRefused) {
  const std::string a = write("a.jsonl", {item(0, "ok"), summary(4, 0, 2)});
  const std::string other_size = write("b.jsonl", {item(1, "ok"), summary(5, 1, 2)});
  const std::string other_tool = write("c.jsonl", {item(1, "ok"), summary(4, 1, 2, "nms-filter")});
  json renamed = item(0, "ok");
  renamed["input"] = "elsewhere";
  const std::string other_input = write("d.jsonl", {renamed, summary(4, 1, 2)});
  const std::string not_json = write("e.jsonl", {summary(4, 1, 2)}, "garbage\n");
  const std::string no_summary = write("f.jsonl", {item(0, "ok")});
  const std::string outside = write("g.jsonl", {item(7, "ok"), summary(4, 1, 2)});
  json mistyped = item(1, "ok");
  mistyped["status"] = 5;
  const std::string wrong_type = write("h.jsonl", {summary(4, 1, 2), mistyped});
  auto message = [&](const std::vector<std::string>& paths) {
    try {
      merge_reports(paths, "demo", {});
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({a, other_size}).find("b.jsonl:2: a batch of 5 items"), std::string::npos)
      << message({a, other_size});
  EXPECT_NE(message({a, other_tool}).find("a report of 'nms-filter'"), std::string::npos);
  EXPECT_NE(message({a, other_input}).find("item 0 is 'elsewhere'"), std::string::npos);
  EXPECT_NE(message({not_json}).find("e.jsonl:2: not a JSON record"), std::string::npos);
  EXPECT_NE(message({no_summary}).find("no summary record"), std::string::npos);
  EXPECT_NE(message({outside}).find("outside a batch of 4"), std::string::npos);
  EXPECT_NE(message({wrong_type}).find("h.jsonl:2: "), std::string::npos) << message({wrong_type});
  EXPECT_NE(message({(dir_ / "none.jsonl").string()}).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace s3d::cli
