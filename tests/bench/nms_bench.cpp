// bench_nms: CUDA-event timings of s3d's batched NMS, device-resident (inputs already on the GPU, result left
// there): warm-up, then the median of >= 20 runs. Writes a table, a JSON file and (optionally) the exact
// inputs as raw little-endian files for tests/bench/nms_torchvision.py, so both are timed on the same boxes.
//   bench_nms [--out results.json] [--dump DIR] [--runs 20] [--max-n 2000000] [--mot DIR] [--only SUBSTRING]
//             [--eager]
// S3D_NMS_FUSED_MAX_BOXES=N (0..16384) sets the CUDA backend's fused small-N path limit (default 1024; 0 = off):
// run twice to compare the two hard-NMS paths on the same cases.
// Repeated identical sync-free calls run as a replayed CUDA graph (column `graph`); --eager runs every call on
// the legacy default stream, where the engine never captures, to show the launch overhead a graph saves.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "nms_gen.hpp"
#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/detection/nms.hpp"

namespace {

using namespace s3d;
using namespace s3d::detection;

template <typename T>
void write_raw(const std::filesystem::path& p, const std::vector<T>& v) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
}

struct Case {
  std::string name;
  bench::Boxes boxes;
  float iou;
  NmsMethod method = NmsMethod::kHard;
};

}  // namespace

int main(int argc, char** argv) {
  std::string out = "nms_bench.json", dump, mot, only;
  int runs = 20;
  bool eager = false;
  long long max_n = 2000000;
  for (int a = 1; a < argc; ++a) {
    const std::string k = argv[a];
    auto next = [&]() { return std::string(a + 1 < argc ? argv[++a] : ""); };
    if (k == "--out")
      out = next();
    else if (k == "--dump")
      dump = next();
    else if (k == "--runs")
      runs = std::max(20, std::atoi(next().c_str()));
    else if (k == "--max-n")
      max_n = std::atoll(next().c_str());
    else if (k == "--mot")
      mot = next();
    else if (k == "--only")
      only = next();
    else if (k == "--eager")
      eager = true;
  }
  const Device device = resolve_device(Device::parse("cuda"));
  const std::string dev_name = describe_device(device);
  std::printf("device: %s\n", dev_name.c_str());

  std::vector<Case> cases;
  for (bool clustered : {true, false}) {
    for (long long n : {1000LL, 10000LL, 100000LL, 370000LL, 1000000LL, 2000000LL}) {
      if (n > max_n) continue;
      auto boxes = bench::generate(n, clustered, 1, static_cast<std::uint32_t>(n) + (clustered ? 1 : 2));
      for (float iou : {0.5f, 0.7f}) {
        cases.push_back({std::string(clustered ? "clustered" : "uniform") + "_" + std::to_string(n) + "_iou" +
                             (iou == 0.5f ? "0.5" : "0.7"),
                         boxes, iou});
      }
    }
  }
  for (long long n : {10000LL, 100000LL, 1000000LL}) {
    if (n > max_n) continue;
    cases.push_back({"per_class80_clustered_" + std::to_string(n) + "_iou0.5",
                     bench::generate(n, true, 80, 7 + static_cast<std::uint32_t>(n)), 0.5f});
  }
  cases.push_back(
      {"soft_gaussian_clustered_10000", bench::generate(10000, true, 1, 99), 0.5f, NmsMethod::kSoftGaussian});
  cases.push_back({"soft_linear_clustered_10000", bench::generate(10000, true, 1, 99), 0.3f, NmsMethod::kSoftLinear});
  if (!mot.empty() && std::filesystem::exists(mot)) {
    bench::Boxes b;
    std::vector<std::filesystem::path> files;
    for (auto& e : std::filesystem::directory_iterator(mot))
      if (e.path().extension() == ".txt") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (std::size_t s = 0; s < files.size(); ++s) {
      std::ifstream f(files[s]);
      std::string line;
      while (std::getline(f, line)) {
        std::stringstream ss(line);
        std::string c[7];
        for (auto& x : c) std::getline(ss, x, ',');
        const double l = std::stod(c[2]), t = std::stod(c[3]), w = std::stod(c[4]), h = std::stod(c[5]);
        b.xyxy.insert(b.xyxy.end(), {float(l), float(t), float(l + w), float(t + h)});
        b.scores.push_back(float(std::stod(c[6])));
        b.groups.push_back(static_cast<std::int64_t>(s) * 100000 + std::stoll(c[0]));
      }
    }
    cases.push_back({"mot15_per_frame_groups_iou0.2", b, 0.2f});
  }

  auto engine_owner = std::make_unique<NmsEngine>(device);
  NmsEngine& engine = *engine_owner;
  const Stream own_stream;
  const StreamHandle stream = eager ? nullptr : own_stream.get();
  Event e0(Event::Timing::kEnabled), e1(Event::Timing::kEnabled);
  std::ofstream json(out);
  json << "{\"device\": \"" << dev_name << "\", \"runs\": " << runs << ", \"cases\": [\n";
  std::printf("%-40s %10s %10s %10s %10s %12s %7s %5s\n", "case", "n", "median_ms", "min_ms", "kept", "tile_pairs",
              "rounds", "graph");
  bool first = true;
  for (const auto& c : cases) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    const auto n = static_cast<std::int64_t>(c.boxes.scores.size());
    if (!dump.empty()) {
      std::filesystem::create_directories(dump);
      write_raw(std::filesystem::path(dump) / (c.name + ".boxes.f32"), c.boxes.xyxy);
      write_raw(std::filesystem::path(dump) / (c.name + ".scores.f32"), c.boxes.scores);
      if (!c.boxes.groups.empty()) write_raw(std::filesystem::path(dump) / (c.name + ".groups.i64"), c.boxes.groups);
    }
    DeviceBuffer<float> d_boxes, d_scores;
    DeviceBuffer<std::int64_t> d_groups;
    d_boxes.copy_from_host(c.boxes.xyxy, stream);
    d_scores.copy_from_host(c.boxes.scores, stream);
    NmsInput in;
    in.boxes = d_boxes.data();
    in.scores = d_scores.data();
    in.count = n;
    if (!c.boxes.groups.empty()) {
      d_groups.copy_from_host(c.boxes.groups, stream);
      in.group_ids = d_groups.data();
    }
    NmsParams p;
    p.iou_threshold = c.iou;
    p.method = c.method;
    for (int w = 0; w < 3; ++w) engine.run_device_async(in, p, stream);
    synchronize(stream);
    std::vector<float> ms;
    for (int r = 0; r < runs; ++r) {
      e0.record(stream);
      engine.run_device_async(in, p, stream);
      e1.record(stream);
      e1.synchronize();
      ms.push_back(Event::elapsed_ms(e0, e1));
    }
    std::sort(ms.begin(), ms.end());
    const float median = ms[ms.size() / 2];
    const auto res = engine.download(stream);
    const auto st = engine.last_stats();
    std::printf("%-40s %10lld %10.4f %10.4f %10zu %12lld %7lld %5d\n", c.name.c_str(), static_cast<long long>(n),
                median, ms.front(), res.keep.size(), static_cast<long long>(st.tile_pairs),
                static_cast<long long>(st.rounds), st.graph ? 1 : 0);
    std::fflush(stdout);
    if (!dump.empty()) {
      std::vector<std::int64_t> keep(res.keep.begin(), res.keep.end());
      write_raw(std::filesystem::path(dump) / (c.name + ".keep.i64"), keep);
    }
    json << (first ? "" : ",\n") << "  {\"case\": \"" << c.name << "\", \"n\": " << n << ", \"iou\": " << c.iou
         << ", \"median_ms\": " << median << ", \"min_ms\": " << ms.front() << ", \"kept\": " << res.keep.size()
         << ", \"tile_pairs\": " << st.tile_pairs << ", \"rounds\": " << st.rounds
         << ", \"grouped\": " << (c.boxes.groups.empty() ? "false" : "true") << ", \"method\": \""
         << (c.method == NmsMethod::kHard         ? "hard"
             : c.method == NmsMethod::kSoftLinear ? "soft-linear"
                                                  : "soft-gaussian")
         << "\", \"graph\": " << (st.graph ? "true" : "false") << "}";
    first = false;
  }
  json << "\n]}\n";
  json.close();
  engine_owner.reset();  // its buffers are released on `stream`: before the stream goes
  synchronize(stream);
  return 0;
}
