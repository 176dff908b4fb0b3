// bench_voxels: VoxelEngine::voxelize on a KITTI scan (host memory in and out: the upload of the points and
// the download of every output are inside the time), host wall clock, warm-up 3, median and minimum of
// --runs (>= 20). Cases: world grid 0.05 m (all points), and SECOND's settings (range [0, -40, -3, 70.4, 40, 1],
// voxel 0.05 x 0.05 x 0.1, 5 points per voxel, 16,000 voxels); on CUDA also the latter device-resident
// (VoxelEngine::voxelize_device: points already on the GPU, voxels left there), repeated and with the point
// count alternating between calls, and device-resident: the world and min-bound grids at 0.05 m with 5 points
// per voxel, the world grid without a limit (the sort path), and SECOND's settings with batch ids: the scan
// alone (ids all 0: the range grid's time plus the pass that checks the ids) and four copies (ids 0..3). One JSON line
// per case.
//   bench_voxels --bin 000000.bin [--device cuda|cpu] [--runs 50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/points/voxels.hpp"

int main(int argc, char** argv) {
  using namespace s3d;
  using namespace s3d::points;
  std::string bin, device = "cuda";
  int runs = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--bin") bin = v;
    if (a == "--device") device = v;
    if (a == "--runs") runs = std::max(20, std::stoi(v));
  }
  std::ifstream in(bin, std::ios::binary | std::ios::ate);
  if (!in) {
    std::fprintf(stderr, "usage: bench_voxels --bin KITTI.bin [--device cuda|cpu] [--runs N]\n");
    return 2;
  }
  std::vector<float> raw(static_cast<std::size_t>(in.tellg()) / 4);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size() * 4));
  std::vector<float> xyz;
  for (std::size_t i = 0; i + 3 < raw.size(); i += 4) xyz.insert(xyz.end(), {raw[i], raw[i + 1], raw[i + 2]});
  const PointsView<const float> points{xyz.data(), xyz.size() / 3};

  VoxelizeParams world;
  world.voxel_size = {0.05f, 0.05f, 0.05f};
  VoxelizeParams second;
  second.voxel_size = {0.05f, 0.05f, 0.1f};
  second.origin = VoxelOrigin::kRange;
  second.range = {0.f, -40.f, -3.f, 70.4f, 40.f, 1.f};
  second.max_points_per_voxel = 5;
  second.max_voxels = 16000;
  VoxelEngine engine(Device::parse(device));
  for (const auto& [name, params] : {std::pair<const char*, VoxelizeParams>{"world_0.05", world},
                                     std::pair<const char*, VoxelizeParams>{"second_range", second}}) {
    Voxels v;
    for (int i = 0; i < 3; ++i) v = engine.voxelize(points, nullptr, params);
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      v = engine.voxelize(points, nullptr, params);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf(
        "{\"case\": \"%s\", \"device\": \"%s\", \"points\": %zu, \"voxels\": %lld, \"runs\": %d, "
        "\"median_ms\": %.4f, \"min_ms\": %.4f}\n",
        name, device.c_str(), points.size, static_cast<long long>(v.count), runs, ms[ms.size() / 2], ms.front());
  }
  if (device != "cpu") {  // device-resident: the points uploaded once, the voxels left on the GPU
    DeviceBuffer<float> on_gpu(xyz.size());
    on_gpu.copy_from_host_async(xyz.data(), xyz.size(), nullptr);
    DeviceVoxels v;
    for (int i = 0; i < 3; ++i) v = engine.voxelize_device({on_gpu.data(), points.size}, second);
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      v = engine.voxelize_device({on_gpu.data(), points.size}, second);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf(
        "{\"case\": \"second_range_device_resident\", \"device\": \"%s\", \"points\": %zu, "
        "\"voxels\": %lld, \"runs\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f}\n",
        device.c_str(), points.size, static_cast<long long>(v.count), runs, ms[ms.size() / 2], ms.front());
    // The same with the point count alternating (n, n - 1): no call repeats the previous one, as when every
    // scan differs, so the engine cannot replay a captured graph.
    ms.clear();
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      v = engine.voxelize_device({on_gpu.data(), points.size - (i & 1)}, second);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf(
        "{\"case\": \"second_range_device_resident_varying\", \"device\": \"%s\", \"points\": %zu, "
        "\"voxels\": %lld, \"runs\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f}\n",
        device.c_str(), points.size, static_cast<long long>(v.count), runs, ms[ms.size() / 2], ms.front());

    // Grids that need the points' bounds (found on the GPU), and batch ids.
    const std::size_t n = points.size;
    DeviceBuffer<float> four(4 * xyz.size());
    std::vector<std::int32_t> ids(4 * n);
    for (int c = 0; c < 4; ++c) {
      s3d::detail::copy_bytes_async(four.data() + c * xyz.size(), xyz.data(), xyz.size() * sizeof(float), 1, nullptr);
      std::fill(ids.begin() + c * n, ids.begin() + (c + 1) * n, c);
    }
    DeviceBuffer<std::int32_t> four_ids(ids.size());
    four_ids.copy_from_host_async(ids.data(), ids.size(), nullptr);
    s3d::synchronize(nullptr);
    VoxelizeParams world5 = world, min_bound5 = world;
    world5.max_points_per_voxel = 5;
    min_bound5.max_points_per_voxel = 5;
    min_bound5.origin = VoxelOrigin::kMinBound;
    struct DeviceCase {
      const char* name;
      const float* xyz;
      const std::int32_t* batch;
      std::size_t n;
      VoxelizeParams params;
    };
    for (const DeviceCase& c :
         {DeviceCase{"world_0.05_max5_device_resident", on_gpu.data(), nullptr, n, world5},
          DeviceCase{"min_bound_0.05_max5_device_resident", on_gpu.data(), nullptr, n, min_bound5},
          DeviceCase{"world_0.05_device_resident", on_gpu.data(), nullptr, n, world},
          DeviceCase{"second_range_batch1_device_resident", four.data(), four_ids.data(), n, second},
          DeviceCase{"second_range_batch4_device_resident", four.data(), four_ids.data(), 4 * n, second}}) {
      for (int i = 0; i < 3; ++i) v = engine.voxelize_device({c.xyz, c.n}, c.batch, c.params);
      ms.clear();
      for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        v = engine.voxelize_device({c.xyz, c.n}, c.batch, c.params);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      std::printf(
          "{\"case\": \"%s\", \"device\": \"%s\", \"points\": %zu, \"voxels\": %lld, \"runs\": %d, "
          "\"median_ms\": %.4f, \"min_ms\": %.4f}\n",
          c.name, device.c_str(), c.n, static_cast<long long>(v.count), runs, ms[ms.size() / 2], ms.front());
    }
  }
  return 0;
}
