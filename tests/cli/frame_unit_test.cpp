// Unit tests of the CLI frame's pure pieces: output templates, --shard parsing and partitioning, manifest
// and input-list parsing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "s3d/cli/atomic_file.hpp"
#include "s3d/cli/inputs.hpp"
#include "s3d/cli/output_template.hpp"
#include "s3d/cli/shard.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::cli {
namespace {

TEST(OutputTemplate, ExpandsEveryPlaceholder) {
  const std::string in = "data/left/000001.png";
  EXPECT_EQ(expand_template("{}", in, 7), "data/left/000001.png");
  EXPECT_EQ(expand_template("{/}", in, 7), "000001.png");
  EXPECT_EQ(expand_template("{.}", in, 7), "data/left/000001");
  EXPECT_EQ(expand_template("{/.}", in, 7), "000001");
  EXPECT_EQ(expand_template("{//}", in, 7), "data/left");
  EXPECT_EQ(expand_template("{#}", in, 7), "7");
  EXPECT_EQ(expand_template("out/{/.}_{#}.pfm", in, 12), "out/000001_12.pfm");
  EXPECT_EQ(expand_template("{//}/{/.}.d.png", in, 1), "data/left/000001.d.png");
}

TEST(OutputTemplate, EdgeCases) {
  EXPECT_EQ(expand_template("{//}", "a.png", 1), ".");
  EXPECT_EQ(expand_template("{//}", "/a.png", 1), "/");
  EXPECT_EQ(expand_template("{.}", "dir.v2/file", 1), "dir.v2/file");  // a dot in a folder is no extension
  EXPECT_EQ(expand_template("{/.}", "archive.tar.gz", 1), "archive.tar");
  EXPECT_EQ(expand_template("{/.}", ".hidden", 1), ".hidden");
  EXPECT_EQ(expand_template("{/.}.txt", "-", 3), "stdin.txt");
  EXPECT_EQ(expand_template("{x}{", "a.png", 1), "{x}{");  // unknown placeholders stay literal
  EXPECT_EQ(expand_template("fixed.png", "a.png", 1), "fixed.png");
  EXPECT_TRUE(has_placeholder("out/{/.}.png"));
  EXPECT_TRUE(has_placeholder("{#}"));
  EXPECT_FALSE(has_placeholder("out/{x}.png"));
  EXPECT_FALSE(has_placeholder("out.png"));
}

GetEnv env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(Shard, ParsesExplicitValues) {
  const GetEnv none = env_of({});
  Shard s = parse_shard("", none);
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.count, 1);
  s = parse_shard("3/8", none);
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 8);
  for (const char* bad : {"8/8", "-1/4", "1/0", "a/b", "1", "1/", "/2", "1/2x", "auto2"})
    EXPECT_THROW(parse_shard(bad, none), InvalidArgument) << bad;
}

TEST(Shard, AutoReadsSlurmThenKubernetes) {
  Shard s = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 4);
  // --array=1-4: ids start at SLURM_ARRAY_TASK_MIN.
  s = parse_shard(
      "auto", env_of({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"}}));
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  EXPECT_THROW(parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "2"}})), InvalidArgument);
  // Kubernetes indexed job: the count comes from --shard-count, else S3D_SHARD_COUNT.
  s = parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "5"}}), 6);
  EXPECT_EQ(s.index, 5);
  EXPECT_EQ(s.count, 6);
  s = parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "1"}, {"S3D_SHARD_COUNT", "3"}}));
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 3);
  EXPECT_THROW(parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "1"}})), InvalidArgument);
  EXPECT_THROW(parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "3"}}), 3), InvalidArgument);
  // No scheduler: the whole batch.
  s = parse_shard("auto", env_of({}));
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.source, "auto-none");
}

// The variables as Slurm 22.05 sets them (observed on a real single-node Slurm, docs/CLUSTER.md).
TEST(Shard, AutoReadsSlurmStepsAndArraysTogether) {
  // An `srun -n 3` step: task 2 of 3.
  Shard s = parse_shard("auto", env_of({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}, {"SLURM_STEP_NUM_TASKS", "3"}}));
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.source, "slurm-step");
  // The batch script of an `--ntasks=3` job is not a step (no SLURM_STEP_NUM_TASKS): the whole batch, never a
  // silent third of it.
  s = parse_shard("auto", env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "3"}}));
  EXPECT_EQ(s.count, 1);
  // A one-task step adds nothing.
  s = parse_shard("auto", env_of({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}}));
  EXPECT_EQ(s.count, 1);
  // `srun -n 2` inside array task 3 of 4: shard 3 * 2 + 1 of 8.
  s = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "3"},
                                  {"SLURM_ARRAY_TASK_COUNT", "4"},
                                  {"SLURM_ARRAY_TASK_MIN", "0"},
                                  {"SLURM_PROCID", "1"},
                                  {"SLURM_STEP_NUM_TASKS", "2"}}));
  EXPECT_EQ(s.index, 7);
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(s.source, "slurm-array+step");
  EXPECT_THROW(parse_shard("auto", env_of({{"SLURM_STEP_NUM_TASKS", "2"}})), InvalidArgument);
  EXPECT_THROW(parse_shard("auto", env_of({{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "2"}})), InvalidArgument);
}

TEST(Shard, AutoStatedCountKeepsAResubmittedArrayTasksShard) {
  // `sbatch --array=3` re-submits one task: its own array has one task (MIN 3, COUNT 1). Without a stated
  // count that is the whole batch; with --shard-count 4 (or S3D_SHARD_COUNT) it is shard 3 of 4 again.
  const std::map<std::string, std::string> alone{
      {"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "1"}, {"SLURM_ARRAY_TASK_MIN", "3"}};
  Shard s = parse_shard("auto", env_of(alone));
  EXPECT_EQ(s.count, 1);
  s = parse_shard("auto", env_of(alone), 4);
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.source, "slurm-array");
  auto with_env = alone;
  with_env["S3D_SHARD_COUNT"] = "4";
  s = parse_shard("auto", env_of(with_env));
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  EXPECT_THROW(parse_shard("auto", env_of(alone), 3), InvalidArgument);  // task 3 of an array of 3
}

TEST(Shard, AutoReadsGnuParallel) {
  // PARALLEL_SEQ counts jobs from 1.
  Shard s = parse_shard("auto", env_of({{"PARALLEL_SEQ", "1"}}), 2);
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.source, "gnu-parallel");
  s = parse_shard("auto", env_of({{"PARALLEL_SEQ", "2"}, {"S3D_SHARD_COUNT", "2"}}));
  EXPECT_EQ(s.index, 1);
  EXPECT_THROW(parse_shard("auto", env_of({{"PARALLEL_SEQ", "3"}}), 2), InvalidArgument);
  EXPECT_THROW(parse_shard("auto", env_of({{"PARALLEL_SEQ", "1"}})), InvalidArgument);  // no count
  EXPECT_THROW(parse_shard("auto", env_of({{"PARALLEL_SEQ", "0"}}), 2), InvalidArgument);
  EXPECT_EQ(parse_shard("1/2", env_of({{"PARALLEL_SEQ", "1"}})).source, "flag");  // i/n wins over the environment
}

TEST(Shard, PartitionsExactly) {
  std::vector<std::string> paths;
  for (int i = 0; i < 23; ++i) paths.push_back("f" + std::to_string(i) + ".txt");
  const std::vector<Item> all = items_from_paths(paths, ItemSpec{});
  for (int n : {1, 2, 3, 5, 23, 30}) {
    std::multiset<std::size_t> seen;
    for (int i = 0; i < n; ++i) {
      const auto mine = select_shard(all, Shard{i, n});
      for (const auto& item : mine) {
        EXPECT_EQ(static_cast<int>(item.index % n), i);
        EXPECT_EQ(item.inputs[0], paths[item.index]);  // index is the full-order position
        seen.insert(item.index);
      }
      // Input order is kept inside a shard.
      EXPECT_TRUE(
          std::is_sorted(mine.begin(), mine.end(), [](const Item& a, const Item& b) { return a.index < b.index; }));
    }
    ASSERT_EQ(seen.size(), all.size()) << n;
    for (std::size_t k = 0; k < all.size(); ++k) EXPECT_EQ(seen.count(k), 1u) << "n=" << n << " k=" << k;
  }
}

TEST(Inputs, PositionalGroupsByInputsPerItem) {
  const auto items = items_from_paths({"l0.png", "r0.png", "l1.png", "r1.png"}, ItemSpec{2, {"left", "right"}});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].inputs, (std::vector<std::string>{"l1.png", "r1.png"}));
  EXPECT_EQ(items[1].index, 1u);
  EXPECT_THROW(items_from_paths({"a", "b", "c"}, ItemSpec{2, {"left", "right"}}), InvalidArgument);
  EXPECT_EQ(items_from_paths({"-"}, ItemSpec{})[0].name(), "<stdin>");
}

TEST(Inputs, PositionalArgumentsExpandIntoItems) {
  const ItemSpec pairs{2, {"left", "right"}};
  std::vector<std::string> offered;
  // `DIR` stands for two pairs (with a ground truth field); other arguments are ordinary paths.
  const ExpandArgument expand = [&](const std::string& arg) -> std::optional<std::vector<nlohmann::json>> {
    offered.push_back(arg);
    if (arg == "EMPTY") return std::vector<nlohmann::json>{};
    if (arg == "BAD") return std::vector<nlohmann::json>{{{"left", "x.png"}}};
    if (arg != "DIR") return std::nullopt;
    return std::vector<nlohmann::json>{{{"left", "DIR/l0.png"}, {"right", "DIR/r0.png"}, {"gt", "DIR/d0.pfm"}},
                                       {{"left", "DIR/l1.png"}, {"right", "DIR/r1.png"}}};
  };
  const auto items = items_from_paths({"a.png", "b.png", "DIR", "EMPTY", "c.png", "-"}, pairs, expand);
  EXPECT_EQ(offered, (std::vector<std::string>{"a.png", "b.png", "DIR", "EMPTY", "c.png"}));  // never `-`
  ASSERT_EQ(items.size(), 4u);
  for (std::size_t k = 0; k < items.size(); ++k) EXPECT_EQ(items[k].index, k);
  EXPECT_EQ(items[0].inputs, (std::vector<std::string>{"a.png", "b.png"}));
  EXPECT_EQ(items[1].inputs, (std::vector<std::string>{"DIR/l0.png", "DIR/r0.png"}));
  EXPECT_EQ(items[1].fields["gt"], "DIR/d0.pfm");
  EXPECT_EQ(items[2].inputs, (std::vector<std::string>{"DIR/l1.png", "DIR/r1.png"}));
  EXPECT_EQ(items[3].inputs, (std::vector<std::string>{"c.png", "-"}));
  EXPECT_TRUE(items[0].fields.is_object() && items[0].fields.empty());
  // A pair cut by an expanded argument, or left incomplete, or a record without its keys: usage errors.
  try {
    items_from_paths({"a.png", "DIR", "b.png"}, pairs, expand);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("a.png: an incomplete item before DIR", 0), 0u) << e.what();
  }
  EXPECT_THROW(items_from_paths({"DIR", "a.png"}, pairs, expand), InvalidArgument);
  EXPECT_THROW(items_from_paths({"a.png", "b.png", "c.png"}, pairs, expand), InvalidArgument);
  EXPECT_THROW(items_from_paths({"BAD"}, pairs, expand), InvalidArgument);
  // Without a hook, or when it declines everything: plain grouping.
  EXPECT_EQ(items_from_paths({"a", "b"}, pairs, ExpandArgument{}).size(), 1u);
  EXPECT_EQ(items_from_paths({"a", "b", "c", "d"}, pairs, expand)[1].inputs, (std::vector<std::string>{"c", "d"}));
}

TEST(Inputs, ListSkipsBlanksAndComments) {
  std::istringstream one("a.txt\n\n# comment\n  b c.txt  \n");
  const auto items = items_from_list(one, "list", ItemSpec{});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].inputs[0], "b c.txt");  // one input per line: spaces belong to the path
  std::istringstream two("l 0.png\tr 0.png\nl1.png r1.png\n");
  const auto pairs = items_from_list(two, "list", ItemSpec{2, {"left", "right"}});
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].inputs, (std::vector<std::string>{"l 0.png", "r 0.png"}));
  EXPECT_EQ(pairs[1].inputs, (std::vector<std::string>{"l1.png", "r1.png"}));
  std::istringstream bad("l1.png\n");
  try {
    items_from_list(bad, "pairs.txt", ItemSpec{2, {"left", "right"}});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("pairs.txt:1"), std::string::npos) << e.what();
  }
}

TEST(Inputs, ManifestKeysAndFields) {
  std::istringstream in(R"({"left":"l0.png","right":"r0.png","id":7}

{"right":"r1.png","left":"l1.png","calib":{"f":700}}
)");
  const auto items = items_from_manifest(in, "m.jsonl", ItemSpec{2, {"left", "right"}});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].inputs, (std::vector<std::string>{"l0.png", "r0.png"}));
  EXPECT_EQ(items[0].fields["id"], 7);
  EXPECT_EQ(items[1].inputs, (std::vector<std::string>{"l1.png", "r1.png"}));
  EXPECT_EQ(items[1].fields["calib"]["f"], 700);
  EXPECT_EQ(items[1].index, 1u);
}

TEST(Inputs, ManifestErrorsNameTheLine) {
  for (const char* text : {"{\"input\":\"a\"}\nnot json\n", "{\"input\":\"a\"}\n[1,2]\n",
                           "{\"input\":\"a\"}\n{\"x\":1}\n", "{\"input\":\"a\"}\n{\"input\":3}\n"}) {
    std::istringstream in(text);
    try {
      items_from_manifest(in, "m.jsonl", ItemSpec{});
      FAIL() << "expected InvalidArgument for " << text;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("m.jsonl:2"), std::string::npos) << e.what();
    }
  }
}

TEST(Inputs, ManifestChainsAnotherToolsRecords) {
  std::istringstream in(R"({"type":"item","index":0,"input":"a.json","output":"out/a.kept.json","status":"ok"}
{"type":"item","index":1,"input":"b.json","status":"failed","error":"bad"}
{"type":"item","index":2,"input":"c.json","output":"out/c.kept.json","status":"ok"}
{"type":"summary","ok":2,"failed":1}
)");
  const auto items = items_from_manifest(in, "done.jsonl", ItemSpec{});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].inputs[0], "out/a.kept.json");
  EXPECT_EQ(items[1].inputs[0], "out/c.kept.json");
  EXPECT_EQ(items[1].index, 1u);  // positions in this manifest's order (what --shard partitions)
}

TEST(Manifest, NamesThatLeaveTheOutputFolderAreRefused) {
  const ItemSpec spec{1, {"input"}};
  for (const std::string bad : {"../x", "/abs/x", "a/../../x", ""}) {
    std::istringstream in("{\"input\":\"a\",\"name\":\"ok/n\"}\n{\"input\":\"a\",\"name\":\"" + bad + "\"}\n");
    try {
      items_from_manifest(in, "m.jsonl", spec);
      ADD_FAILURE() << "accepted name " << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("m.jsonl:2: ", 0), 0u) << e.what();
    }
  }
  std::istringstream ok("{\"input\":\"a\",\"name\":\"sub/x..y\"}\n");
  EXPECT_EQ(items_from_manifest(ok, "m.jsonl", spec).size(), 1u);
}

// s3d::cli::write_atomically, the primitive under ItemContext::write_atomically.
class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("s3d-atomic-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::size_t files() const {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir_), {}));
  }
  std::filesystem::path dir_;
};

TEST_F(AtomicFile, TempIsNextToTargetAndKeepsTheExtension) {
  const std::string target = (dir_ / "disp.pfm").string();
  const std::string a = cli::temp_path_for(target), b = cli::temp_path_for(target);
  EXPECT_NE(a, b);
  EXPECT_EQ(std::filesystem::path(a).parent_path(), dir_);
  EXPECT_EQ(std::filesystem::path(a).extension(), ".pfm");
  EXPECT_EQ(std::filesystem::path(a).filename().string()[0], '.');  // hidden while incomplete
}

TEST_F(AtomicFile, RenamesOnSuccess) {
  const std::string target = (dir_ / "out.txt").string();
  std::string seen_tmp;
  cli::write_atomically(target, [&](const std::string& tmp) {
    seen_tmp = tmp;
    EXPECT_FALSE(std::filesystem::exists(target));  // nothing visible before the rename
    std::ofstream(tmp) << "done";
  });
  EXPECT_FALSE(std::filesystem::exists(seen_tmp));
  std::ifstream in(target);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "done");
  EXPECT_EQ(files(), 1u);
}

TEST_F(AtomicFile, ExceptionLeavesNothingAndKeepsAnOldTarget) {
  const std::string target = (dir_ / "out.txt").string();
  std::ofstream(target) << "old";
  EXPECT_THROW(cli::write_atomically(target,
                                     [](const std::string& tmp) {
                                       std::ofstream(tmp) << "half";
                                       throw DataError("boom");
                                     }),
               DataError);
  EXPECT_EQ(files(), 1u);  // the temp file is gone
  std::ifstream in(target);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "old");
}

TEST_F(AtomicFile, StaleTempsOfDeadProcessesOfThisHostAreRemoved) {
  const std::string live = cli::temp_path_for((dir_ / "a.txt").string());
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // reaped: its pid names no process now
  std::string dead = live;
  const std::string own = "." + std::to_string(::getpid()) + ".";
  dead.replace(dead.rfind(own), own.size(), "." + std::to_string(child) + ".");
  const std::string dead_folder = cli::temp_path_for((dir_ / "voc").string());
  std::string dead_dir = dead_folder;
  dead_dir.replace(dead_dir.rfind(own), own.size(), "." + std::to_string(child) + ".");
  std::ofstream(live) << "x";
  std::ofstream(dead) << "x";
  std::filesystem::create_directories(std::filesystem::path(dead_dir) / "inner");
  std::ofstream((dir_ / "a.txt.s3d-tmp.note").string()) << "not a temp name";  // not hidden: kept
  cli::remove_stale_temps(dir_.string());
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(dead_dir));
  EXPECT_EQ(files(), 2u);
}

TEST_F(AtomicFile, LinksAreFollowedToTheirTarget) {
  std::filesystem::create_directories(dir_ / "real");
  std::filesystem::create_symlink("real/t.txt", dir_ / "l1");
  std::filesystem::create_symlink(dir_ / "l1", dir_ / "l2");
  EXPECT_EQ(cli::resolve_links((dir_ / "l2").string()), (dir_ / "real" / "t.txt").string());  // dangling too
  EXPECT_EQ(cli::resolve_links((dir_ / "plain").string()), (dir_ / "plain").string());
  std::filesystem::create_symlink(dir_ / "loop", dir_ / "loop");
  EXPECT_THROW(cli::resolve_links((dir_ / "loop").string()), IoError);
  EXPECT_TRUE(cli::is_write_through("/dev/null"));
  EXPECT_FALSE(cli::is_write_through((dir_ / "l2").string()));
}

TEST_F(AtomicFile, MissingFolderIsAnIoError) {
  const std::string target = (dir_ / "no" / "such" / "out.txt").string();
  EXPECT_THROW(cli::write_atomically(target, [](const std::string& tmp) { std::ofstream(tmp) << "x"; }), IoError);
}

}  // namespace
}  // namespace s3d::cli
