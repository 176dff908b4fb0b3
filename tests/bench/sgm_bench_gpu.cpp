// bench_sgm: GPU timings of s3d::stereo::SgmEngine with CUDA events (warm-up, median of >= 20 runs over
// several random-texture input sets), device-to-device (compute_device) and end to end (host images in,
// host disparity out: pinned staging, H2D, kernels, D2H). Prints a table, writes JSON (argv[1], optional),
// and the physical floor: bytes the aggregated volume must move / measured device bandwidth. The d2d call is
// also timed by wall clock with the stream synchronised, the way ../shared/peers' libSGM harness times
// libSGM (whose execute() runs its own streams); tests/bench/sgm_libsgm.py puts the two side by side.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../../src/stereo/src/backend.hpp"  // stage timings (internal API of the stereo library)
#include "../../src/stereo/src/sgm_paths_cuda.cuh"
#include "aggregate_variants.hpp"  // the lane layouts the library does not ship
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/stereo/sgm.hpp"

namespace {

using namespace s3d;

struct Setting {
  std::string name;
  int width, height, disparities, paths;
  bool full;               ///< true: library defaults (true right-view LR check, speckle); false: libSGM-like core
  bool lr_volume = false;  ///< full, with the LR check's right view from the left volume (LrMethod::kVolume)
};

/// Random texture smoothed horizontally, and its copy shifted by a smooth disparity field.
void make_pair(int w, int h, int max_d, std::uint32_t seed, std::vector<std::uint8_t>& l,
               std::vector<std::uint8_t>& r) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, 255);
  std::vector<int> base(static_cast<std::size_t>(w + max_d + 2) * h);
  for (auto& v : base) v = u(rng);
  l.assign(static_cast<std::size_t>(w) * h, 0);
  r.assign(l.size(), 0);
  const int W2 = w + max_d + 2;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int d = static_cast<int>((0.25 + 0.5 * (x + y) / double(w + h)) * max_d);
      r[y * w + x] = static_cast<std::uint8_t>((base[y * W2 + x + max_d] + base[y * W2 + x + max_d + 1]) / 2);
      l[y * w + x] = static_cast<std::uint8_t>((base[y * W2 + x + max_d - d] + base[y * W2 + x + max_d - d + 1]) / 2);
    }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

double measure_bandwidth_gbs() {
  const std::size_t bytes = std::size_t(1) << 30;
  DeviceBuffer<std::uint8_t> a(bytes), b(bytes);
  Event e0(Event::Timing::kEnabled), e1(Event::Timing::kEnabled);
  std::vector<double> t;
  for (int i = 0; i < 8; ++i) {
    e0.record(nullptr);
    S3D_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice));
    e1.record(nullptr);
    e1.synchronize();
    if (i >= 2) t.push_back(Event::elapsed_ms(e0, e1));
  }
  return 2.0 * bytes / (median(t) * 1e-3) / 1e9;  // read + write
}

/// Per-stage device times (median of 20 after warm-up) through the library's internal stage launchers.
std::string stage_times(const Device& dev, int w, int h, int D) {
  namespace sd = s3d::stereo::detail;
  (void)dev;
  const std::size_t n = static_cast<std::size_t>(w) * h;
  // declared before the buffers, so destroyed after them: the buffers are released ordered on `st`
  const Stream st, side;
  const Event fork, join;
  Event e0(Event::Timing::kEnabled), e1(Event::Timing::kEnabled);
  std::vector<std::uint8_t> l, r;
  make_pair(w, h, D / 2, 5, l, r);
  DeviceBuffer<std::uint8_t> dl(n, st), dr(n, st);
  DeviceBuffer<std::uint64_t> cl(n, st), cr(n, st);
  const int vp = sd::cuda::volume_pitch(D);
  const std::size_t vmax = n * std::max(vp, sd::cuda::volume_pitch(D, 32));  // room for the lane experiments
  DeviceBuffer<std::uint16_t> va(vmax, st), vb(vmax, st), vc(vmax, st);
  DeviceBuffer<float> disp(n, st), out(n, st);
  S3D_CUDA_CHECK(cudaMemcpyAsync(dl.data(), l.data(), n, cudaMemcpyHostToDevice, st));
  S3D_CUDA_CHECK(cudaMemcpyAsync(dr.data(), r.data(), n, cudaMemcpyHostToDevice, st));
  stereo::SgmParams p;
  p.disparities = D;
  sd::MatchSpec spec = sd::make_match_spec(p, w, h, false);
  const sd::CensusSpec cs{p.census, p.census_width, p.census_height};
  const sd::cuda::AggregateStreams as{st, side, fork.get(), join.get()};
  auto time = [&](auto&& f) {
    std::vector<double> t;
    for (int i = 0; i < 25; ++i) {
      e0.record(st);
      f();
      e1.record(st);
      e1.synchronize();
      if (i >= 5) t.push_back(Event::elapsed_ms(e0, e1));
    }
    return median(t);
  };
  const double t_census = time([&] {
    sd::cuda::census(ImageView<const std::uint8_t>{dl.data(), w, h, w}, cs, cl.data(), st);
    sd::cuda::census(ImageView<const std::uint8_t>{dr.data(), w, h, w}, cs, cr.data(), st);
  });
  double t_agg[3];
  const int paths[3] = {2, 4, 8};
  for (int i = 0; i < 3; ++i) {
    spec.paths = paths[i];
    t_agg[i] = time([&] { sd::cuda::aggregate(cl.data(), cr.data(), spec, va.data(), vb.data(), vc.data(), as); });
  }
  const double t_wta =
      time([&] { sd::cuda::wta(va.data(), vb.data(), vc.data(), spec, disp.data(), w, nullptr, 0, st); });
  // the engine's per-path uint8 pipeline (all directions in one launch, WTA summing the bytes)
  double t_pp[3] = {0, 0, 0}, t_pc[3] = {0, 0, 0}, t_ppw = 0;
  std::string pp_lanes_line;
  {
    sd::MatchSpec e = spec;
    e.paths = 8;
    DeviceBuffer<std::uint8_t> pv(sd::cuda::per_path_bytes(e), st), pc(sd::cuda::per_path_cost_bytes(e), st);
    for (int i = 0; i < 3; ++i) {
      e.paths = paths[i];
      t_pp[i] =
          time([&] { sd::cuda::experimental::aggregate_per_path(cl.data(), cr.data(), e, nullptr, pv.data(), st); });
      t_pc[i] = time([&] { sd::cuda::aggregate_per_path(cl.data(), cr.data(), e, pc.data(), pv.data(), st); });
    }
    // the cost-volume path kernel's lane layouts (PerPathLanes), costs included
    for (auto lanes :
         {sd::cuda::experimental::PerPathLanes::kWide, sd::cuda::experimental::PerPathLanes::kNarrowHorizontal,
          sd::cuda::experimental::PerPathLanes::kNarrowAll}) {
      double t[3];
      for (int i = 0; i < 3; ++i) {
        e.paths = paths[i];
        t[i] = time([&] {
          sd::cuda::experimental::aggregate_per_path(cl.data(), cr.data(), e, pc.data(), pv.data(), st, lanes);
        });
      }
      char buf[200];
      std::snprintf(buf, sizeof buf, " | per-path lanes %d%s: horizontal-only %.3f, 4 paths %.3f, 8 paths %.3f",
                    static_cast<int>(lanes),
                    lanes == sd::cuda::experimental::default_per_path_lanes(e) ? " (default)" : "", t[0], t[1], t[2]);
      pp_lanes_line += buf;
    }
    e.paths = 8;
    t_ppw = time([&] { sd::cuda::wta_per_path(pv.data(), e, disp.data(), w, nullptr, 0, st); });
    pv.reset();
    pc.reset();
  }
  // experiment: forced lanes per scanline (volumes sized for the largest pitch)
  std::string lanes_line;
  for (int lanes : {4, 8, 16, 32}) {
    sd::MatchSpec e = spec;
    e.lanes = lanes;
    if (static_cast<std::size_t>(sd::cuda::volume_pitch(D, lanes)) * n > va.size()) continue;
    double t[2];
    for (int i = 0; i < 2; ++i) {
      e.paths = i == 0 ? 2 : 8;
      t[i] = time(
          [&] { sd::cuda::experimental::aggregate(cl.data(), cr.data(), e, va.data(), vb.data(), vc.data(), as); });
    }
    const double tw = time([&] { sd::cuda::wta(va.data(), vb.data(), vc.data(), e, disp.data(), w, nullptr, 0, st); });
    char buf[160];
    std::snprintf(buf, sizeof buf, " | lanes %d: horizontal %.3f, 8 paths %.3f, wta %.3f", lanes, t[0], t[1], tw);
    lanes_line += buf;
  }
  const double t_med = time([&] { sd::cuda::median3x3(disp.data(), w, out.data(), w, w, h, st); });
  const double t_lr = time([&] { sd::cuda::lr_check(disp.data(), w, out.data(), w, h, 1.0f, st); });
  DeviceBuffer<int> scratch(2 * n, st);
  const double t_sp = time([&] { sd::cuda::speckle(out.data(), w, w, h, 100, 2.0f, scratch.data(), st); });
  st.synchronize();
  char line[768];
  std::snprintf(
      line, sizeof line,
      "stages %dx%d D%d: census(L+R) %.3f | aggregate horizontal-only %.3f, 4 paths %.3f, 8 paths %.3f | "
      "wta %.3f | per-path on the fly: horizontal-only %.3f, 4 paths %.3f, 8 paths %.3f | per-path cost volume "
      "(engine, costs included): horizontal-only %.3f, 4 paths %.3f, 8 paths %.3f | wta 8 paths %.3f | "
      "median %.3f | lr %.3f | speckle %.3f ms",
      w, h, D, t_census, t_agg[0], t_agg[1], t_agg[2], t_wta, t_pp[0], t_pp[1], t_pp[2], t_pc[0], t_pc[1], t_pc[2],
      t_ppw, t_med, t_lr, t_sp);
  const std::string result = std::string(line) + pp_lanes_line + lanes_line;
  for (auto* b : {&va, &vb, &vc}) b->reset();
  cl.reset();
  cr.reset();
  dl.reset();
  dr.reset();
  disp.reset();
  out.reset();
  scratch.reset();
  st.synchronize();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_sgm: no CUDA device\n");
    return 1;
  }
  const Device dev(Device::Kind::kCuda, 0);
  resolve_device(dev);
  const std::string device_name = describe_device(dev);
  const double bw = measure_bandwidth_gbs();
  std::printf("device: %s, measured copy bandwidth %.0f GB/s\n", device_name.c_str(), bw);

  const std::vector<Setting> settings = {
      {"1024x440 D128 4p sub", 1024, 440, 128, 4, false},
      {"1024x440 D128 8p sub", 1024, 440, 128, 8, false},
      {"1242x375 D128 8p", 1242, 375, 128, 8, false},
      {"1242x375 D256 8p", 1242, 375, 256, 8, false},
      {"1920x1080 D128 8p", 1920, 1080, 128, 8, false},
      {"1920x1080 D256 8p", 1920, 1080, 256, 8, false},
      {"1242x375 D128 8p full", 1242, 375, 128, 8, true},
      {"1920x1080 D256 8p full", 1920, 1080, 256, 8, true},
      {"1242x375 D128 8p full, LR volume", 1242, 375, 128, 8, true, true},
      {"1920x1080 D256 8p full, LR volume", 1920, 1080, 256, 8, true, true},
  };
  const int kSets = 3, kWarm = 3, kRuns = 20;
  std::string json = "{\n  \"device\": \"" + device_name + "\",\n  \"bandwidth_gbs\": " + std::to_string(bw) +
                     ",\n  \"runs_per_set\": " + std::to_string(kRuns) + ", \"input_sets\": " + std::to_string(kSets) +
                     ",\n  \"results\": [\n";
  std::printf("%-34s %9s %9s %9s %10s %10s\n", "setting", "d2d ms", "d2d wall", "e2e ms", "floor ms",
              "ours-traffic ms");
  bool first = true;
  for (const Setting& s : settings) {
    stereo::SgmParams p;
    p.disparities = s.disparities;
    p.paths = s.paths;
    p.subpixel = true;
    if (!s.full) {  // libSGM's pipeline: census, aggregation, WTA + uniqueness + subpixel, 3x3 median
      p.lr_check = false;
      p.speckle_size = 0;
      p.fill = false;
      p.uniqueness = 5;  // libSGM's uniqueness 0.95 (its benchmark's setting)
    }
    if (s.lr_volume) p.lr_method = stereo::LrMethod::kVolume;
    stereo::SgmEngine engine(dev, p, s.width, s.height);
    cudaStream_t st = engine.stream();
    const std::size_t n = static_cast<std::size_t>(s.width) * s.height;
    DeviceBuffer<std::uint8_t> dl(n, st), dr(n, st);
    DeviceBuffer<float> dd(n, st);
    std::vector<double> d2d, d2d_wall, e2e;
    Event e0(Event::Timing::kEnabled), e1(Event::Timing::kEnabled);
    std::vector<float> host_disp(n);
    for (int set = 0; set < kSets; ++set) {
      std::vector<std::uint8_t> l, r;
      make_pair(s.width, s.height, s.disparities / 2, 1000 + set, l, r);
      S3D_CUDA_CHECK(cudaMemcpyAsync(dl.data(), l.data(), n, cudaMemcpyHostToDevice, st));
      S3D_CUDA_CHECK(cudaMemcpyAsync(dr.data(), r.data(), n, cudaMemcpyHostToDevice, st));
      S3D_CUDA_CHECK(cudaStreamSynchronize(st));
      const ImageView<const std::uint8_t> vl{dl.data(), s.width, s.height, s.width},
          vr{dr.data(), s.width, s.height, s.width};
      const ImageView<float> vd{dd.data(), s.width, s.height, s.width};
      for (int i = 0; i < kWarm + kRuns; ++i) {
        S3D_CUDA_CHECK(cudaStreamSynchronize(st));
        const auto t0 = std::chrono::steady_clock::now();
        e0.record(st);
        engine.compute_device(vl, vr, vd, ImageView<float>{}, st);
        e1.record(st);
        e1.synchronize();
        const auto t1 = std::chrono::steady_clock::now();
        if (i < kWarm) continue;
        d2d.push_back(Event::elapsed_ms(e0, e1));
        d2d_wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      const ImageView<const std::uint8_t> hl{l.data(), s.width, s.height, s.width},
          hr{r.data(), s.width, s.height, s.width};
      for (int i = 0; i < kWarm + kRuns; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        engine.compute(hl, hr, host_disp.data(), nullptr);
        const auto t1 = std::chrono::steady_clock::now();
        if (i >= kWarm) e2e.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    }
    const double md = median(d2d), mw = median(d2d_wall), me = median(e2e);
    // Floor: the aggregated uint16 volume written once and read once (4 bytes per (pixel, d)); ours (the
    // per-path cost-volume pipeline): the uint8 costs written once and read by each direction, each direction
    // writes its uint8 volume (pitch = D rounded up) and WTA reads them all (cache hits not counted); x2 with
    // the right-view pass (full).
    const double voxels = double(n) * s.disparities;
    const double floor_ms = voxels * 4.0 / (bw * 1e9) * 1e3;
    const double passes = s.full && !s.lr_volume ? 2.0 : 1.0;
    const double ours_ms = passes * double(n) * stereo::detail::cuda::per_path_pitch(s.disparities) *
                           (1.0 + 3.0 * s.paths) / (bw * 1e9) * 1e3;
    std::printf("%-34s %9.3f %9.3f %9.3f %10.3f %10.3f\n", s.name.c_str(), md, mw, me, floor_ms, ours_ms);
    std::fflush(stdout);
    json += std::string(first ? "" : ",\n") + "    {\"setting\": \"" + s.name +
            "\", \"width\": " + std::to_string(s.width) + ", \"height\": " + std::to_string(s.height) +
            ", \"disparities\": " + std::to_string(s.disparities) + ", \"paths\": " + std::to_string(s.paths) +
            ", \"subpixel\": true" + ", \"lr_check\": " + (s.full ? "true" : "false") + ", \"lr_method\": \"" +
            (s.full ? stereo::lr_method_name(p.lr_method) : "off") + "\"" +
            ", \"d2d_ms_median\": " + std::to_string(md) + ", \"d2d_wall_ms_median\": " + std::to_string(mw) +
            ", \"e2e_ms_median\": " + std::to_string(me) + ", \"floor_ms\": " + std::to_string(floor_ms) +
            ", \"volume_traffic_ms\": " + std::to_string(ours_ms) + "}";
    first = false;
  }
  json += "\n  ],\n  \"stages\": [\n";
  bool first_stage = true;
  for (auto [w, h, D] : {std::tuple{1024, 440, 128}, std::tuple{1242, 375, 128}, std::tuple{1242, 375, 256},
                         std::tuple{1920, 1080, 128}, std::tuple{1920, 1080, 256}}) {
    const std::string line = stage_times(dev, w, h, D);
    std::printf("%s\n", line.c_str());
    json += std::string(first_stage ? "" : ",\n") + "    \"" + line + "\"";
    first_stage = false;
  }
  json += "\n  ]\n}\n";
  if (argc > 1) {
    std::ofstream(argv[1]) << json;
    std::printf("wrote %s\n", argv[1]);
  }
  return 0;
}
