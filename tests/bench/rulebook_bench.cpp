// bench_rulebook: RulebookEngine::build_device on voxel coordinates already on the GPU (the input of
// ../shared/peers/torchsparse/bench_rulebook.py, saved with its --save-input), host wall clock around the
// synchronous call (the peer's median_ms is the same clock), warm-up 3, median and minimum of --runs (>= 20).
// Cases: subm_k3, conv_k3s2 (padding 1) and second_chain (SECOND's VoxelBackBone8x: the 8 distinct rulebooks
// of its middle encoder, each strided layer's outputs feeding the next). One JSON line per case.
//   bench_rulebook --npy coords.npy [--shape 41,1600,1408] [--runs 50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/points/rulebook.hpp"

namespace {
using namespace s3d;
using namespace s3d::points;

/// int32 [M, 4] from a C-order little-endian .npy.
std::vector<std::int32_t> read_coords(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  in.read(magic, 8);
  unsigned short header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 2);
  std::string header(header_len, ' ');
  in.read(&header[0], header_len);
  if (!in || header.find("'<i4'") == std::string::npos || header.find("False") == std::string::npos) {
    std::fprintf(stderr, "%s: need a C-order int32 .npy [M, 4]\n", path.c_str());
    std::exit(1);
  }
  const auto open = header.find('(') + 1;
  const long long rows = std::stoll(header.substr(open));
  std::vector<std::int32_t> c(static_cast<std::size_t>(rows) * 4);
  in.read(reinterpret_cast<char*>(c.data()), static_cast<std::streamsize>(c.size() * 4));
  return c;
}

ConvSpec conv(std::array<int, 3> k, std::array<int, 3> s, std::array<int, 3> p, bool subm) {
  ConvSpec spec;
  spec.kernel = k;
  spec.stride = s;
  spec.padding = p;
  spec.subm = subm;
  return spec;
}

struct Timing {
  double median_ms, min_ms;
};

Timing time_runs(int runs, const std::function<void()>& call) {
  for (int i = 0; i < 3; ++i) call();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

}  // namespace

int main(int argc, char** argv) {
  std::string npy;
  std::array<std::int32_t, 3> shape{41, 1600, 1408};
  int runs = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--npy") npy = v;
    if (a == "--runs") runs = std::max(20, std::stoi(v));
    if (a == "--shape") std::sscanf(v.c_str(), "%d,%d,%d", &shape[0], &shape[1], &shape[2]);
  }
  if (npy.empty()) {
    std::fprintf(stderr, "usage: bench_rulebook --npy coords.npy [--shape Z,Y,X] [--runs N]\n");
    return 2;
  }
  const std::vector<std::int32_t> host = read_coords(npy);
  const long long m = static_cast<long long>(host.size() / 4);
  int batch = 1;
  for (long long r = 0; r < m; ++r) batch = std::max(batch, host[4 * r] + 1);
  DeviceBuffer<std::int32_t> coords(host.size());
  coords.copy_from_host_async(host.data(), host.size(), nullptr);
  RulebookEngine engine(Device(Device::Kind::kCuda));

  const auto report = [&](const char* name, const Timing& t, long long outputs, long long pairs, int layers) {
    std::printf(
        "{\"case\": \"%s\", \"impl\": \"s3d\", \"voxels\": %lld, \"outputs\": %lld, \"pairs\": %lld, \"layers\": %d, "
        "\"runs\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f}\n",
        name, m, outputs, pairs, layers, runs, t.median_ms, t.min_ms);
  };
  for (const auto& [name, spec] :
       {std::pair<const char*, ConvSpec>{"subm_k3", conv({3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true)},
        std::pair<const char*, ConvSpec>{"conv_k3s2", conv({3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false)}}) {
    DeviceRulebook rb;
    const Timing t = time_runs(runs, [&] { rb = engine.build_device(coords.data(), m, shape, batch, spec); });
    report(name, t, rb.outputs, rb.offsets.back(), 1);
  }

  // SECOND (OpenPCDet VoxelBackBone8x): subm1, spconv2, subm2, spconv3, subm3, spconv4 (padding (0, 1, 1)),
  // subm4, conv_out (3, 1, 1) stride (2, 1, 1). Each strided layer's outputs are copied into its own buffer
  // before the next layer runs (the engine reuses its output buffers).
  const ConvSpec subm = conv({3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true);
  const std::vector<ConvSpec> down = {
      conv({3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false), conv({3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false),
      conv({3, 3, 3}, {2, 2, 2}, {0, 1, 1}, false), conv({3, 1, 1}, {2, 1, 1}, {0, 0, 0}, false)};
  std::vector<DeviceBuffer<std::int32_t>> level(down.size());
  long long pairs = 0, outputs = 0;
  const Timing t = time_runs(runs, [&] {
    pairs = 0;
    const std::int32_t* in = coords.data();
    long long n = m;
    std::array<std::int32_t, 3> s = shape;
    for (std::size_t l = 0; l < down.size(); ++l) {
      pairs += engine.build_device(in, n, s, batch, subm).offsets.back();
      const DeviceRulebook rb = engine.build_device(in, n, s, batch, down[l]);
      pairs += rb.offsets.back();
      level[l].resize(static_cast<std::size_t>(rb.outputs) * 4);
      detail::copy_bytes_async(level[l].data(), rb.out_coords, static_cast<std::size_t>(rb.outputs) * 16, 3, nullptr);
      in = level[l].data();
      n = rb.outputs;
      s = rb.out_shape;
      outputs = n;
    }
  });
  report("second_chain", t, outputs, pairs, 8);
  return 0;
}
