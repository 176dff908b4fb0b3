// bench_sgm_pipeline: per-pair throughput of a batch of N host pairs (default 50 at 1242x375, D128, 8 paths,
// library defaults) through SgmEngine::compute() one by one vs SgmPipeline (depth 2 and 3), wall clock,
// median of R runs after a warm-up run. Also (a) the device-resident lower bound: compute_device() alone,
// back to back on the engine stream, and (b) both batch forms with H ms of simulated host work per pair
// (a busy loop standing for reading / decoding / writing files, which the pipeline overlaps with the GPU).
// OpenCV-free (runs on the GPU machine). Usage: bench_sgm_pipeline [out.json] [N] [R] [host_ms]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/sgm_pipeline.hpp"

namespace {

using namespace s3d;
using Clock = std::chrono::steady_clock;

constexpr int kWidth = 1242, kHeight = 375, kDisparities = 128, kPaths = 8;
constexpr int kDistinctPairs = 10;  // the batch cycles through these (different textures and shifts)

struct Pair {
  std::vector<std::uint8_t> left, right;
};

Pair make_pair(int seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, 255);
  const int pad = kDisparities + 2, w2 = kWidth + pad;
  std::vector<int> base(static_cast<std::size_t>(w2) * kHeight);
  for (auto& v : base) v = u(rng);
  Pair p{std::vector<std::uint8_t>(static_cast<std::size_t>(kWidth) * kHeight), {}};
  p.right = p.left;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      const int d =
          static_cast<int>((0.2 + 0.6 * (x + y + seed * 37 % 200) / double(kWidth + kHeight + 200)) * kDisparities);
      p.right[y * kWidth + x] =
          static_cast<std::uint8_t>((base[y * w2 + x + pad - 1] + base[y * w2 + x + pad - 2]) / 2);
      p.left[y * kWidth + x] =
          static_cast<std::uint8_t>((base[y * w2 + x + pad - 1 - d] + base[y * w2 + x + pad - 2 - d]) / 2);
    }
  return p;
}

ImageView<const std::uint8_t> view(const std::vector<std::uint8_t>& v) { return {v.data(), kWidth, kHeight, kWidth}; }

void host_work(double ms) {
  if (ms <= 0) return;
  const auto end = Clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (Clock::now() < end) {
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Median over `runs` (after one warm-up) of the batch's wall time divided by `n`, in ms per pair.
double per_pair_ms(int n, int runs, const std::function<void()>& batch) {
  batch();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    batch();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / n);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string json_path = argc > 1 ? argv[1] : "";
  const int n = argc > 2 ? std::atoi(argv[2]) : 50;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 9;
  const double host_ms = argc > 4 ? std::atof(argv[4]) : 1.0;
  try {
    const Device dev = resolve_device(Device(Device::Kind::kAuto));
    if (!dev.is_cuda()) {
      std::fprintf(stderr, "bench_sgm_pipeline: no CUDA device\n");
      return 1;
    }
    stereo::SgmParams params;  // library defaults (LR check, median, speckle, subpixel, uniqueness)
    params.disparities = kDisparities;
    params.paths = kPaths;
    std::vector<Pair> pairs;
    for (int k = 0; k < kDistinctPairs; ++k) pairs.push_back(make_pair(k + 1));
    const std::size_t px = static_cast<std::size_t>(kWidth) * kHeight;
    std::vector<std::vector<float>> out(2, std::vector<float>(px));  // the caller's output, alternating

    stereo::SgmEngine engine(dev, params, kWidth, kHeight);
    auto sequential = [&](double work_ms) {
      return [&, work_ms] {
        for (int i = 0; i < n; ++i) {
          host_work(work_ms);  // "read" pair i
          const Pair& p = pairs[i % kDistinctPairs];
          engine.compute(view(p.left), view(p.right), out[i % 2].data(), nullptr);
        }
      };
    };
    std::vector<std::unique_ptr<stereo::SgmPipeline>> pipes;
    for (int depth : {2, 3})
      pipes.push_back(std::make_unique<stereo::SgmPipeline>(dev, params, kWidth, kHeight, depth));
    auto pipelined = [&](stereo::SgmPipeline& pipe, double work_ms) {
      return [&, work_ms] {
        int submitted = 0;
        for (int done = 0; done < n; ++done) {
          while (submitted < n && !pipe.full()) {
            host_work(work_ms);  // "read" the pair, while earlier ones run on the GPU
            const Pair& p = pairs[submitted % kDistinctPairs];
            pipe.submit(view(p.left), view(p.right));
            ++submitted;
          }
          pipe.retrieve(out[done % 2].data(), nullptr);
        }
      };
    };

    // Device-resident lower bound: inputs already on the device, results left there.
    DeviceBuffer<std::uint8_t> d_left, d_right;
    DeviceBuffer<float> d_out(px);
    d_left.copy_from_host_async(pairs[0].left.data(), px, nullptr);
    d_right.copy_from_host_async(pairs[0].right.data(), px, nullptr);
    synchronize(nullptr);
    auto device_only = [&] {
      const ImageView<const std::uint8_t> l{d_left.data(), kWidth, kHeight, kWidth},
          r{d_right.data(), kWidth, kHeight, kWidth};
      for (int i = 0; i < n; ++i)
        engine.compute_device(l, r, ImageView<float>{d_out.data(), kWidth, kHeight, kWidth}, ImageView<float>{},
                              nullptr);
      synchronize(engine.stream());
    };

    struct Row {
      std::string name;
      double host_ms, ms;
    };
    std::vector<Row> rows;
    rows.push_back({"device-resident compute_device (lower bound)", 0.0, per_pair_ms(n, runs, device_only)});
    for (double w : {0.0, host_ms}) {
      rows.push_back({"sequential SgmEngine::compute", w, per_pair_ms(n, runs, sequential(w))});
      rows.push_back({"SgmPipeline depth 2", w, per_pair_ms(n, runs, pipelined(*pipes[0], w))});
      rows.push_back({"SgmPipeline depth 3", w, per_pair_ms(n, runs, pipelined(*pipes[1], w))});
    }

    const std::string device = describe_device(dev);
    std::printf("bench_sgm_pipeline: %s, %dx%d D%d %d paths (library defaults), N=%d pairs, median of %d runs\n",
                device.c_str(), kWidth, kHeight, kDisparities, kPaths, n, runs);
    std::printf("%-46s %12s %12s %10s %9s\n", "mode", "host ms/pair", "ms/pair", "pairs/s", "vs seq");
    double seq = 0;
    for (const Row& r : rows) {
      if (r.name.rfind("sequential", 0) == 0) seq = r.ms;
      const bool batch = r.name.rfind("device", 0) != 0;
      std::printf("%-46s %12.2f %12.3f %10.1f %9s\n", r.name.c_str(), r.host_ms, r.ms, 1000.0 / r.ms,
                  batch ? (std::to_string(seq / r.ms).substr(0, 4) + "x").c_str() : "-");
    }
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      f << "{\"device\": \"" << device << "\", \"width\": " << kWidth << ", \"height\": " << kHeight
        << ", \"disparities\": " << kDisparities << ", \"paths\": " << kPaths << ", \"pairs\": " << n
        << ", \"runs\": " << runs << ", \"results\": [";
      for (std::size_t i = 0; i < rows.size(); ++i)
        f << (i ? ", " : "") << "{\"mode\": \"" << rows[i].name << "\", \"host_ms_per_pair\": " << rows[i].host_ms
          << ", \"ms_per_pair\": " << rows[i].ms << "}";
      f << "]}\n";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_sgm_pipeline: %s\n", e.what());
    return 1;
  }
  return 0;
}
