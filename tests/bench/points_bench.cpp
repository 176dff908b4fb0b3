// bench_points: s3d's FPS / ball query / kNN / three-NN on the GPU, device-resident, timed with CUDA events
// (warm-up, then the median of >= 20 runs; >= 3 when a run exceeds 0.1 s), on the same cases as
// ../shared/peers/bench_points.py. With --dump DIR (that script's --dump output, written in the same run) it
// reads the peers' exact input points and compares its indices with theirs; without, it draws uniform points.
// One JSON line per case on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/points/fps.hpp"
#include "s3d/points/neighbors.hpp"

namespace {
using namespace s3d;
using namespace s3d::points;

/// A little .npy reader (C order, little endian): float32 / int32 / int64 arrays.
struct Npy {
  std::vector<std::size_t> shape;
  std::vector<float> f32;
  std::vector<long long> ints;
  bool ok = false;
};

Npy read_npy(const std::string& path) {
  Npy out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  char magic[8];
  in.read(magic, 8);
  unsigned short header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 2);
  std::string header(header_len, ' ');
  in.read(&header[0], header_len);
  const auto descr_at = header.find("'descr': '") + 10;
  const std::string descr = header.substr(descr_at, header.find('\'', descr_at) - descr_at);
  const auto shape_at = header.find('(') + 1;
  const std::string dims = header.substr(shape_at, header.find(')') - shape_at);
  std::size_t count = 1;
  for (std::size_t p = 0; p < dims.size();) {
    const std::size_t comma = dims.find(',', p);
    const std::string d = dims.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
    if (d.find_first_of("0123456789") != std::string::npos)
      out.shape.push_back(std::stoull(d)), count *= out.shape.back();
    if (comma == std::string::npos) break;
    p = comma + 1;
  }
  if (descr == "<f4") {
    out.f32.resize(count);
    in.read(reinterpret_cast<char*>(out.f32.data()), static_cast<std::streamsize>(count * 4));
  } else if (descr == "<i8") {
    out.ints.resize(count);
    in.read(reinterpret_cast<char*>(out.ints.data()), static_cast<std::streamsize>(count * 8));
  } else if (descr == "<i4") {
    std::vector<int> v(count);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * 4));
    out.ints.assign(v.begin(), v.end());
  } else {
    return out;
  }
  out.ok = static_cast<bool>(in);
  return out;
}

struct Timing {
  double median = 0, min = 0;
  int runs = 0;
};

/// Times `call` (enqueued on `stream`) with CUDA events.
Timing time_it(const std::function<void()>& call, StreamHandle stream, int wanted_runs) {
  Event e0(Event::Timing::kEnabled), e1(Event::Timing::kEnabled);
  auto once = [&] {
    e0.record(stream);
    call();
    e1.record(stream);
    e1.synchronize();
    return static_cast<double>(Event::elapsed_ms(e0, e1));
  };
  const double first = once();
  const int warmups = first > 1000 ? 0 : first > 100 ? 1 : 3;
  for (int i = 0; i < warmups; ++i) once();
  const int runs = first > 100 ? std::max(3, static_cast<int>(15000 / first)) : wanted_runs;
  std::vector<double> ms;
  for (int i = 0; i < std::min(runs, wanted_runs); ++i) ms.push_back(once());
  std::sort(ms.begin(), ms.end());
  return Timing{ms[ms.size() / 2], ms.front(), static_cast<int>(ms.size())};
}

std::vector<float> uniform(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> v(3 * n);
  for (float& x : v) x = u(rng);
  return v;
}

/// Rows of `ours` ([rows, k], -1 = none) whose sets equal the peer's rows (same layout, -1 padding).
long long rows_with_equal_sets(const std::vector<std::int32_t>& ours, const std::vector<long long>& theirs,
                               long long rows, int k) {
  long long equal = 0;
  for (long long r = 0; r < rows; ++r) {
    std::set<long long> a, b;
    for (int j = 0; j < k; ++j) {
      if (ours[r * k + j] >= 0) a.insert(ours[r * k + j]);
      if (theirs[r * k + j] >= 0) b.insert(theirs[r * k + j]);
    }
    equal += a == b;
  }
  return equal;
}

struct Bench {
  std::string dump;
  std::string save;  // writes each case's indices as raw int32 (CASE__s3d.i32) for offline comparison
  int runs = 20;
  Stream stream;
  FpsEngine fps{Device(Device::Kind::kCuda, 0)};
  NeighborEngine nn{Device(Device::Kind::kCuda, 0)};

  /// The case's points ([B*N] x 3) from the dump, or uniform ones.
  std::vector<float> points(const std::string& name, std::size_t count, std::string& source) {
    if (!dump.empty()) {
      Npy npy = read_npy(dump + "/" + name + "__points.npy");
      if (npy.ok && npy.f32.size() == 3 * count) {
        source = "peers' dump";
        return npy.f32;
      }
    }
    source = "uniform (mt19937 seed 0)";
    return uniform(count, 0);
  }

  void save_indices(const std::string& name, const std::vector<std::int32_t>& indices) const {
    if (save.empty()) return;
    std::ofstream(save + "/" + name + "__s3d.i32", std::ios::binary)
        .write(reinterpret_cast<const char*>(indices.data()), static_cast<std::streamsize>(indices.size() * 4));
  }

  void report(const std::string& name, const std::string& source, const Timing& t, const std::string& check) {
    std::printf(
        "{\"peer\": \"s3d\", \"case\": \"%s\", \"input\": \"%s\", \"event_median_ms\": %.4f, "
        "\"event_min_ms\": %.4f, \"runs\": %d%s%s}\n",
        name.c_str(), source.c_str(), t.median, t.min, t.runs, check.empty() ? "" : ", ", check.c_str());
    std::fflush(stdout);
  }

  void fps_case(const std::string& name, std::size_t batch, std::size_t n, std::size_t m) {
    std::string source;
    const std::vector<float> host = points(name, batch * n, source);
    DeviceBuffer<float> d_points(host.size(), stream);
    d_points.copy_from_host_async(host.data(), host.size(), stream);
    FpsBatch b{d_points.data(),
               std::vector<std::int64_t>(batch, static_cast<std::int64_t>(n)),
               std::vector<std::int64_t>(batch, static_cast<std::int64_t>(m)),
               {}};
    DeviceBuffer<std::int32_t> out(batch * m, stream);
    const Timing t = time_it([&] { fps.run_device_async(b, out.data(), stream); }, stream, runs);
    const std::vector<std::int32_t> ours = out.to_host(stream);
    save_indices(name, ours);
    std::string check;
    for (const char* peer : {"pytorch3d", "pointnet2"}) {
      Npy theirs = dump.empty() ? Npy{} : read_npy(dump + "/" + name + "__" + peer + ".npy");
      if (!theirs.ok || theirs.ints.size() != ours.size()) continue;
      long long rows = 0;
      for (std::size_t r = 0; r < batch; ++r)
        rows += std::equal(ours.begin() + r * m, ours.begin() + (r + 1) * m, theirs.ints.begin() + r * m);
      check += (check.empty() ? "" : ", ") + std::string("\"rows_identical_") + peer + "\": \"" + std::to_string(rows) +
               "/" + std::to_string(batch) + "\"";
    }
    char rate[64];  // clouds a second at the median: the batch's throughput
    std::snprintf(rate, sizeof rate, "\"clouds_per_s\": %.1f", 1000.0 * static_cast<double>(batch) / t.median);
    check += (check.empty() ? "" : ", ") + std::string(rate);
    report(name, source, t, check);
  }

  void neighbor_case(const std::string& name, std::size_t n, std::size_t q, int k, float radius, bool self) {
    std::string source;
    const std::vector<float> host = points(name, n, source);
    DeviceBuffer<float> d_points(host.size(), stream);
    d_points.copy_from_host_async(host.data(), host.size(), stream);
    const std::size_t nq = self ? n : q;
    DeviceBuffer<std::int32_t> idx(nq * k, stream), counts(nq, stream);
    DeviceBuffer<float> dist(nq * k, stream);
    Timing t;
    if (radius > 0) {  // ball query: queries = the first q points
      BallQueryParams p;
      p.radius = radius;
      p.k = k;
      t = time_it(
          [&] {
            nn.ball_query_device_async({d_points.data(), n}, {d_points.data(), q}, p, idx.data(), dist.data(),
                                       counts.data(), stream);
          },
          stream, runs);
    } else if (self) {
      KnnParams p;
      p.k = k;
      t = time_it(
          [&] {
            nn.knn_device_async({d_points.data(), n}, {}, p, idx.data(), dist.data(), counts.data(), stream);
          },
          stream, runs);
    } else {  // three-NN: the dense cloud queries its first q points
      KnnParams p;
      p.k = k;
      t = time_it(
          [&] {
            nn.knn_device_async({d_points.data(), q}, {d_points.data(), n}, p, idx.data(), dist.data(), counts.data(),
                                stream);
          },
          stream, runs);
    }
    const std::vector<std::int32_t> ours = idx.to_host(stream);
    save_indices(name, ours);
    std::string check;
    for (const char* peer : {"pytorch3d", "pointnet2", "torch_cluster"}) {
      Npy theirs = dump.empty() ? Npy{} : read_npy(dump + "/" + name + "__" + peer + ".npy");
      if (!theirs.ok || theirs.ints.size() != ours.size()) continue;
      const long long equal = rows_with_equal_sets(ours, theirs.ints, static_cast<long long>(nq), k);
      check += (check.empty() ? "" : ", ") + std::string("\"rows_same_set_") + peer + "\": \"" + std::to_string(equal) +
               "/" + std::to_string(nq) + "\"";
    }
    report(name, source, t, check);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Bench bench;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dump" && i + 1 < argc)
      bench.dump = argv[++i];
    else if (a == "--save" && i + 1 < argc)
      bench.save = argv[++i];
    else if (a == "--runs" && i + 1 < argc)
      bench.runs = std::stoi(argv[++i]);
    else if (a == "--cases" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_points [--dump DIR] [--save DIR] [--runs N] [--cases substring]\n");
      return 2;
    }
  }
  auto wanted = [&](const char* name) { return only.empty() || std::string(name).find(only) != std::string::npos; };
  if (wanted("fps_16k_1024_b8")) bench.fps_case("fps_16k_1024_b8", 8, 16384, 1024);
  if (wanted("fps_131k_4096")) bench.fps_case("fps_131k_4096", 1, 131072, 4096);
  if (wanted("fps_1m_16384")) bench.fps_case("fps_1m_16384", 1, 1000000, 16384);
  // Throughput on KITTI-sized scans (~115k-125k points): a batch of 64 clouds of 120,000 uniform points to 4,096
  // each (sm_90: one cluster of 16 blocks a cloud, several clouds in flight), and one such cloud alone.
  if (wanted("fps_kitti_b64")) bench.fps_case("fps_kitti_b64", 64, 120000, 4096);
  if (wanted("fps_kitti_b1")) bench.fps_case("fps_kitti_b1", 1, 120000, 4096);
  if (wanted("ball")) bench.neighbor_case("ball_16k_q4096_r0.1_k32", 16384, 4096, 32, 0.1f, false);
  if (wanted("knn")) bench.neighbor_case("knn_131k_k16_self", 131072, 0, 16, 0.f, true);
  if (wanted("three_nn")) bench.neighbor_case("three_nn_16k_from_4096", 16384, 4096, 3, 0.f, false);
  return 0;
}
