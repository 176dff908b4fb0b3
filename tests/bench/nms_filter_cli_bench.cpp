// bench_nms_filter_cli: nms-filter end to end (process start, parsing, per-frame NMS, writing) on the 11
// MOT15 files of ../shared/data/detections (35,147 boxes in 5,444 frames), CPU backend, wall clock.
// test_cli_nms_filter checks the same batch's keep lists against the golden ones; its speed is measured here
// (expected: a fraction of a second; well under 5 s even on a loaded machine).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

fs::path data_dir() {
  if (const char* env = std::getenv("S3D_DATA_DIR")) return env;
  return S3D_BENCH_DATA_DIR;
}

void BM_NmsFilterMotEndToEnd(benchmark::State& state) {
  const fs::path mot = data_dir() / "detections" / "mot15_frcnn_sort";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(mot, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".det.txt") == 0) files.push_back(entry.path());
  }
  if (files.empty()) {
    state.SkipWithError(("no *.det.txt in " + mot.string() + " (set S3D_DATA_DIR)").c_str());
    return;
  }
  std::sort(files.begin(), files.end());
  std::string inputs;
  std::int64_t boxes = 0;
  for (const auto& f : files) {
    inputs += " " + shell_quote(f.string());
    std::ifstream in(f);
    boxes += std::count(std::istreambuf_iterator<char>(in), {}, '\n');
  }
  const fs::path out = fs::temp_directory_path() / ("s3d_bench_nms_filter_" + std::to_string(::getpid()));
  fs::create_directories(out);
  const std::string command = shell_quote(S3D_NMS_FILTER_EXE) +
                              " --device cpu --iou 0.2 --emit indices --overwrite -o " +
                              shell_quote((out / "{/.}.keep").string()) + inputs + " >/dev/null 2>" +
                              shell_quote((out / "stderr.txt").string());
  for (auto _ : state) {
    if (std::system(command.c_str()) != 0) {
      state.SkipWithError(("nms-filter failed: " + command).c_str());
      break;
    }
  }
  fs::remove_all(out, ec);
  state.counters["files"] = static_cast<double>(files.size());
  state.SetItemsProcessed(state.iterations() * boxes);
}

BENCHMARK(BM_NmsFilterMotEndToEnd)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
