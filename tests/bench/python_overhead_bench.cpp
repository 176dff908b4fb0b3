// bench_python_overhead: the C++ side of the Python-call overhead measurement (tests/bench/python_api_bench.py).
// It makes the same calls the Python bindings make for a CUDA array — the engine's device entry point on the
// legacy default stream, then a stream synchronisation (NMS: the kept count read back) — on the raw float32
// inputs that script wrote, and prints the median wall time of one call (steady clock, after a warm-up) as one
// JSON line per op. The script times the same ops through `s3d` in the same run; the difference is what Python
// adds.
//   bench_python_overhead DIR [calls=500]   (DIR: points.f32 [N, 3], queries.f32 [Q, 3], boxes.f32 [B, 4],
//                                            scores.f32 [B], sizes.txt: N Q B fps_m knn_k ball_k ball_r)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/detection/nms.hpp"
#include "s3d/points/fps.hpp"
#include "s3d/points/neighbors.hpp"

namespace {
using namespace s3d;

std::vector<float> read_floats(const std::string& path, std::size_t count) {
  std::vector<float> values(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) throw std::runtime_error("cannot read " + std::to_string(count) + " floats from " + path);
  return values;
}

/// The median wall time of `call` (launch) and of `call` + `finish` (done), microseconds.
struct Times {
  double launch_us;
  double done_us;
};

Times median_us(int calls, const std::function<void()>& call, const std::function<void()>& finish) {
  for (int i = 0; i < 20; ++i) {
    call();
    finish();
  }
  std::vector<double> launch, done;
  for (int i = 0; i < calls; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const auto t1 = std::chrono::steady_clock::now();
    finish();
    const auto t2 = std::chrono::steady_clock::now();
    launch.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    done.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
  }
  std::nth_element(launch.begin(), launch.begin() + calls / 2, launch.end());
  std::nth_element(done.begin(), done.begin() + calls / 2, done.end());
  return {launch[calls / 2], done[calls / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_python_overhead DIR [calls]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int calls = argc > 2 ? std::stoi(argv[2]) : 500;
  std::ifstream sizes(dir + "/sizes.txt");
  std::size_t n = 0, q = 0, b = 0;
  int fps_m = 0, knn_k = 0, ball_k = 0;
  float ball_r = 0;
  if (!(sizes >> n >> q >> b >> fps_m >> knn_k >> ball_k >> ball_r)) {
    std::fprintf(stderr, "bench_python_overhead: cannot read %s/sizes.txt\n", dir.c_str());
    return 2;
  }
  const Device cuda(Device::Kind::kCuda, 0);
  const StreamHandle stream = nullptr;  // the legacy default stream, as torch's default current stream
  const auto upload = [&](const std::vector<float>& host) {
    DeviceBuffer<float> d(host.size(), stream);
    d.copy_from_host_async(host.data(), host.size(), stream);
    return d;
  };
  const DeviceBuffer<float> points = upload(read_floats(dir + "/points.f32", 3 * n));
  const DeviceBuffer<float> queries = upload(read_floats(dir + "/queries.f32", 3 * q));
  const DeviceBuffer<float> boxes = upload(read_floats(dir + "/boxes.f32", 4 * b));
  const DeviceBuffer<float> scores = upload(read_floats(dir + "/scores.f32", b));
  synchronize(stream);

  points::FpsEngine fps(cuda);
  DeviceBuffer<std::int32_t> fps_out(static_cast<std::size_t>(fps_m), stream);
  points::FpsBatch batch;
  batch.xyz = points.data();
  batch.lengths = {static_cast<std::int64_t>(n)};
  batch.samples = {fps_m};
  batch.starts = {0};
  const auto sync = [&] { synchronize(stream); };
  const Times fps_us = median_us(
      calls, [&] { fps.run_device_async(batch, fps_out.data(), stream); }, sync);

  points::NeighborEngine neighbors(cuda);
  DeviceBuffer<std::int32_t> idx(q * static_cast<std::size_t>(std::max(knn_k, ball_k)), stream);
  DeviceBuffer<float> dist(idx.size(), stream);
  points::KnnParams knn;
  knn.k = knn_k;
  const PointsView<const float> pv{points.data(), n}, qv{queries.data(), q};
  const Times knn_us = median_us(
      calls, [&] { neighbors.knn_device_async(pv, qv, knn, idx.data(), dist.data(), nullptr, stream); }, sync);
  points::BallQueryParams ball;
  ball.k = ball_k;
  ball.radius = ball_r;
  const Times ball_us = median_us(
      calls, [&] { neighbors.ball_query_device_async(pv, qv, ball, idx.data(), nullptr, nullptr, stream); }, sync);

  detection::NmsEngine nms(cuda);
  detection::NmsInput in;
  in.boxes = boxes.data();
  in.scores = scores.data();
  in.count = static_cast<std::int64_t>(b);
  detection::NmsParams params;
  std::int64_t kept = 0;
  // NMS synchronises inside the call (the kept count sizes the result): launch and done are the same call.
  const Times nms_us = median_us(
      calls,
      [&] {
        nms.run_device_async(in, params, stream);
        detail::copy_bytes_async(&kept, nms.device_keep_count(), sizeof kept, 2, stream);
        synchronize(stream);
      },
      [] {});

  const std::pair<const char*, Times> rows[] = {
      {"fps", fps_us}, {"knn", knn_us}, {"ball_query", ball_us}, {"nms", nms_us}};
  for (const auto& [op, t] : rows) {
    std::printf("{\"op\": \"%s\", \"cpp_launch_us\": %.2f, \"cpp_us\": %.2f}\n", op, t.launch_us, t.done_us);
  }
  return 0;
}
