// bench_sgm_cpu: Google Benchmark of the CPU SgmEngine beside OpenCV StereoSGBM (MODE_SGBM_3WAY) on a
// KITTI-size pair (the real KITTI frame when OpenCV and the data are present, else a random texture),
// D128, 2 threads (S3D_BENCH_THREADS=N to change), in the same process. s3d runs with its defaults
// (SgmParams{}: census 9x7, P1 24, P2 80, uniqueness 0, median, speckle, fill) plus the paths / LR given below
// (the LR check's right view from a second SGM run, or from the left view's volume).
// The load of a shared machine moves both by tens of percent: compare the ratio within one run, over several
// runs (docs/PERFORMANCE.md).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <vector>

#include "s3d/core/parallel.hpp"
#include "s3d/stereo/sgm.hpp"
#if S3D_BENCH_HAVE_OPENCV
#include <opencv2/calib3d.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace {

const int kThreads = std::getenv("S3D_BENCH_THREADS") ? std::max(1, std::atoi(std::getenv("S3D_BENCH_THREADS"))) : 2;

struct Pair {
  int w = 1242, h = 375;
  std::vector<std::uint8_t> l, r;
};

const Pair& pair() {
  static Pair p = [] {
    Pair q;
#if S3D_BENCH_HAVE_OPENCV
    const char* env = std::getenv("S3D_DATA_DIR");
    const std::filesystem::path dir =
        std::filesystem::path(env ? env : S3D_BENCH_DATA_DIR) / "stereo/kitti2015/000005_10";
    cv::Mat l = cv::imread((dir / "stereo_left.png").string(), cv::IMREAD_GRAYSCALE);
    cv::Mat r = cv::imread((dir / "stereo_right.png").string(), cv::IMREAD_GRAYSCALE);
    if (!l.empty() && !r.empty() && l.size() == r.size() && l.isContinuous() && r.isContinuous()) {
      q.w = l.cols;
      q.h = l.rows;
      q.l.assign(l.data, l.data + l.total());
      q.r.assign(r.data, r.data + r.total());
      return q;
    }
#endif
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> u(0, 255);
    q.l.resize(static_cast<std::size_t>(q.w) * q.h);
    q.r.resize(q.l.size());
    for (auto& v : q.r) v = static_cast<std::uint8_t>(u(rng));
    for (int y = 0; y < q.h; ++y)
      for (int x = 0; x < q.w; ++x) q.l[y * q.w + x] = q.r[y * q.w + std::max(0, x - 20)];
    return q;
  }();
  return p;
}

void BM_s3d_sgm_cpu(benchmark::State& state) {
  s3d::set_cpu_threads(kThreads);
  const Pair& p = pair();
  s3d::stereo::SgmParams params;
  params.disparities = 128;
  params.paths = static_cast<int>(state.range(0));
  params.lr_check = state.range(1) != 0;  // 1: right-view SGM, 2: from the left volume
  params.lr_method = state.range(1) == 2 ? s3d::stereo::LrMethod::kVolume : s3d::stereo::LrMethod::kRightSgm;
  s3d::stereo::SgmEngine engine(s3d::Device(s3d::Device::Kind::kCpu), params, p.w, p.h);
  std::vector<float> disp(p.l.size());
  const s3d::ImageView<const std::uint8_t> l{p.l.data(), p.w, p.h, p.w}, r{p.r.data(), p.w, p.h, p.w};
  for (auto _ : state) {
    engine.compute(l, r, disp.data(), nullptr);
    benchmark::DoNotOptimize(disp.data());
  }
  state.SetLabel(std::to_string(p.w) + "x" + std::to_string(p.h) + " D128 paths " + std::to_string(params.paths) +
                 (!params.lr_check                                     ? " no LR"
                  : params.lr_method == s3d::stereo::LrMethod::kVolume ? " +LR(volume)"
                                                                       : " +LR(right-view SGM)"));
}
BENCHMARK(BM_s3d_sgm_cpu)
    ->Args({8, 1})
    ->Args({8, 2})
    ->Args({8, 0})
    ->Args({4, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

#if S3D_BENCH_HAVE_OPENCV
void BM_opencv_sgbm_3way(benchmark::State& state) {
  cv::setNumThreads(kThreads);
  const Pair& p = pair();
  cv::Mat l(p.h, p.w, CV_8U, const_cast<std::uint8_t*>(p.l.data()));
  cv::Mat r(p.h, p.w, CV_8U, const_cast<std::uint8_t*>(p.r.data()));
  const int bs = 5;
  auto sgbm =
      cv::StereoSGBM::create(0, 128, bs, 8 * bs * bs, 32 * bs * bs, 1, 0, 10, 100, 2, cv::StereoSGBM::MODE_SGBM_3WAY);
  cv::Mat disp;
  for (auto _ : state) {
    sgbm->compute(l, r, disp);
    benchmark::DoNotOptimize(disp.data);
  }
  state.SetLabel(std::to_string(p.w) + "x" + std::to_string(p.h) + " D128 MODE_SGBM_3WAY block 5");
}
BENCHMARK(BM_opencv_sgbm_3way)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
