// bench_points_cpu: Google Benchmark timings of s3d::points on the CPU device beside PCL's KdTreeFLANN, on the
// real clouds of ../shared/data/pointclouds (bunny 35,947 points, KITTI 115,384). Run it with 2 threads
// (OMP_NUM_THREADS=2) and repetitions; docs/PERFORMANCE.md states what each name measures:
//   knn/<cloud>/<queries>/s3d       NeighborEngine::knn, K=16: grid build + all queries (one call)
//   knn/<cloud>/<queries>/pcl_tN    KdTreeFLANN::nearestKSearch over the queries on N threads (tree prebuilt)
//   build/<cloud>/pcl               KdTreeFLANN::setInputCloud (the tree build, single-threaded in FLANN)
//   radius/<cloud>/<queries>/s3d    NeighborEngine::ball_query by distance, the nearest K=64 inside r
//   radius/<cloud>/<queries>/pcl_tN KdTreeFLANN::radiusSearch, max_nn = 64 (the same answer), N threads
//   radius_all/<cloud>/<queries>/pcl_tN  radiusSearch with no cap (the whole ball)
//   fps/<cloud>/<M>/s3d             FpsEngine::run from index 0 (Open3D's times: points_open3d_fps.py)
//   read/aerial/s3d                 s3d::io::read_point_cloud of the 498,868-point binary PLY (7.5 MB, every
//                                   property kept), file in the page cache
//   read/aerial/s3d_reuse           the same into one PointCloud kept across iterations (read_point_cloud(path,
//                                   &cloud): a dataset loop's steady state, its storage reused)
//   read/aerial/cat                 what `cat file > /dev/null` does: read(2) the file in 128 KiB blocks
// <queries> is `self` (every point of the cloud) or `4096` (cloud points moved by a few spacings).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <omp.h>
#include <pcl/kdtree/kdtree_flann.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "s3d/io/point_cloud_io.hpp"
#include "s3d/points/fps.hpp"
#include "s3d/points/neighbors.hpp"

namespace {

using namespace s3d::points;

constexpr int kK = 16;
constexpr int kRadiusK = 64;

struct Cloud {
  std::string name;
  std::string file;
  float radius;  // ~40 neighbours on the bunny's surface; the KITTI rings near the sensor hold far more
  float jitter;  // how far the 4096 external queries move off the cloud
  std::vector<float> xyz, queries;
  pcl::PointCloud<pcl::PointXYZ>::Ptr pcl_cloud;
  pcl::KdTreeFLANN<pcl::PointXYZ> tree;
};

std::vector<float> jittered(const std::vector<float>& xyz, std::size_t count, float jitter) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-jitter, jitter);
  std::vector<float> q;
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t i = rng() % (xyz.size() / 3);
    for (int a = 0; a < 3; ++a) q.push_back(xyz[3 * i + a] + u(rng));
  }
  return q;
}

s3d::PointsView<const float> view(const std::vector<float>& v) { return {v.data(), v.size() / 3}; }

void pcl_knn(benchmark::State& state, Cloud& c, const std::vector<float>& q, int threads) {
  for (auto _ : state) {
    const std::int64_t n = static_cast<std::int64_t>(q.size() / 3);
#pragma omp parallel num_threads(threads)
    {
      std::vector<int> idx;
      std::vector<float> dist;
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t i = 0; i < n; ++i) {
        c.tree.nearestKSearch(pcl::PointXYZ(q[3 * i], q[3 * i + 1], q[3 * i + 2]), kK, idx, dist);
        benchmark::DoNotOptimize(idx.data());
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(q.size() / 3));
}

void pcl_radius(benchmark::State& state, Cloud& c, const std::vector<float>& q, int threads, int max_nn) {
  double found = 0;
  for (auto _ : state) {
    const std::int64_t n = static_cast<std::int64_t>(q.size() / 3);
    double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      std::vector<int> idx;
      std::vector<float> dist;
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t i = 0; i < n; ++i)
        total += c.tree.radiusSearch(pcl::PointXYZ(q[3 * i], q[3 * i + 1], q[3 * i + 2]), c.radius, idx, dist,
                                     static_cast<unsigned>(max_nn));
    }
    found = total / static_cast<double>(n);
  }
  state.counters["mean_found"] = found;
}

/// Wall-clock milliseconds: the work runs on OpenMP threads, so the calling thread's CPU time says nothing.
template <typename F>
void reg(const std::string& name, F&& f) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(f))->Unit(benchmark::kMillisecond)->UseRealTime();
}

void register_cloud(Cloud& c) {
  for (const bool external : {false, true}) {
    // PCL's query lists: the cloud itself or the external queries (s3d gets an empty view for `self`)
    const std::vector<float>* q = external ? &c.queries : &c.xyz;
    const std::string tag = c.name + (external ? "/4096" : "/self");
    reg("knn/" + tag + "/s3d", [&c, external](benchmark::State& state) {
      NeighborEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
      KnnParams p;
      p.k = kK;
      for (auto _ : state) {
        auto r = engine.knn(view(c.xyz), external ? view(c.queries) : s3d::PointsView<const float>{}, p);
        benchmark::DoNotOptimize(r.indices.data());
      }
    });
    for (const int t : {1, 2})
      reg("knn/" + tag + "/pcl_t" + std::to_string(t),
          [&c, q, t](benchmark::State& state) { pcl_knn(state, c, *q, t); });
    reg("radius/" + tag + "/s3d", [&c, external](benchmark::State& state) {
      NeighborEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
      BallQueryParams p;
      p.radius = c.radius;
      p.k = kRadiusK;
      p.order = BallOrder::kDistance;
      double found = 0;
      for (auto _ : state) {
        auto r = engine.ball_query(view(c.xyz), external ? view(c.queries) : s3d::PointsView<const float>{}, p);
        double total = 0;
        for (auto n : r.counts) total += n;
        found = total / static_cast<double>(r.counts.size());
      }
      state.counters["mean_found"] = found;
    });
    for (const int t : {1, 2}) {
      reg("radius/" + tag + "/pcl_t" + std::to_string(t),
          [&c, q, t](benchmark::State& state) { pcl_radius(state, c, *q, t, kRadiusK); });
      reg("radius_all/" + tag + "/pcl_t" + std::to_string(t),
          [&c, q, t](benchmark::State& state) { pcl_radius(state, c, *q, t, 0); });
    }
  }
  reg("build/" + c.name + "/pcl", [&c](benchmark::State& state) {
    for (auto _ : state) {
      pcl::KdTreeFLANN<pcl::PointXYZ> tree;
      tree.setInputCloud(c.pcl_cloud);
      benchmark::DoNotOptimize(&tree);
    }
  });
  for (const int m : {1024, 4096})
    reg("fps/" + c.name + "/" + std::to_string(m) + "/s3d", [&c, m](benchmark::State& state) {
      FpsEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
      for (auto _ : state) {
        auto r = engine.run(view(c.xyz), m, 0);
        benchmark::DoNotOptimize(r.data());
      }
    });
}

void register_read(const std::string& file) {
  reg("read/aerial/s3d", [file](benchmark::State& state) {
    for (auto _ : state) {
      auto cloud = s3d::io::read_point_cloud(file);
      benchmark::DoNotOptimize(cloud.xyz.data());
    }
  });
  reg("read/aerial/s3d_reuse", [file](benchmark::State& state) {
    s3d::PointCloud cloud;
    s3d::io::read_point_cloud(file, &cloud);  // the first read allocates: not timed
    for (auto _ : state) {
      s3d::io::read_point_cloud(file, &cloud);
      benchmark::DoNotOptimize(cloud.xyz.data());
    }
  });
  reg("read/aerial/cat", [file](benchmark::State& state) {
    std::vector<char> block(128 << 10);  // cat's buffer on Linux
    for (auto _ : state) {
      const int fd = ::open(file.c_str(), O_RDONLY);
      if (fd < 0) state.SkipWithError("cannot open the aerial scan");
      while (::read(fd, block.data(), block.size()) > 0) {
      }
      ::close(fd);
      benchmark::DoNotOptimize(block.data());
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const std::string data = S3D_BENCH_DATA_DIR "/pointclouds/";
  static std::vector<Cloud> clouds(2);
  clouds[0].name = "bunny", clouds[0].file = "stanford_bunny/bun_zipper.ply", clouds[0].radius = 0.005f;
  clouds[0].jitter = 0.003f;
  clouds[1].name = "kitti", clouds[1].file = "kitti_velodyne/000000.bin", clouds[1].radius = 0.3f;
  clouds[1].jitter = 0.5f;
  register_read(data + "aerial_vol_total/vol_total_498868.ply");
  for (Cloud& c : clouds) {
    try {
      c.xyz = s3d::io::read_point_cloud(data + c.file).xyz;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_points_cpu: skipping %s: %s\n", c.name.c_str(), e.what());
      continue;
    }
    c.queries = jittered(c.xyz, 4096, c.jitter);
    c.pcl_cloud = pcl::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
    for (std::size_t i = 0; i < c.xyz.size(); i += 3) c.pcl_cloud->push_back({c.xyz[i], c.xyz[i + 1], c.xyz[i + 2]});
    c.tree.setInputCloud(c.pcl_cloud);
    register_cloud(c);
  }
  std::fprintf(stderr, "bench_points_cpu: %d OpenMP threads\n", omp_get_max_threads());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
