// bench_fusion: FusionEngine over the 7-Scenes redkitchen frames (../shared/data/rgbd), frames decoded to
// metres in host memory first, then tracked and fused one by one (the engine's own per-stage timings: host wall
// clock around each stage, CUDA stages synchronised). Prints one JSON line with the medians over the run and
// writes the trajectory (TUM, the ground truth's timestamps) for tests/accuracy/trajectory_eval.py.
//   bench_fusion [--device cuda|cpu] [--mode f2m|f2f] [--frames N] [--half] [--color] [--resolution R]
//                [--out traj.txt]
//                [--size M] [--truncation M] [--truncation-growth G] [--max-depth M] [--huber M] [--iterations A,B,C]
//                [--no-bilateral]
//                [--noise-weighting on|off] [--distance-gate M] [--gate-sigmas S] [--min-inliers R] [--angle-gate DEG]
//                [--camera fx,fy,cx,cy] [--volume dense|sparse] [--voxel-size M] [--max-memory-mb N]
//                [--stereo-baseline B] [--max-step M,DEG]
//                [--sequence depth.txt --depth-scale S]
// (the last ones: FusionParams fields, the library's defaults otherwise, KinFu's plus the ICP's noise weighting;
// the camera defaults to the sequence's camera-intrinsics.txt, 585,585,320,240).
// --half: 320x240 (every other pixel of every other row, intrinsics halved), the CPU real-time target's size.
// --sequence: a TUM RGB-D depth.txt (`timestamp file` lines, # comments) instead of redkitchen, its 16-bit PNGs
// divided by --depth-scale (5000 for TUM); the trajectory then carries the list's timestamps.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "depth_frames.hpp"
#include "s3d/fusion/fusion_engine.hpp"

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

s3d::Image<float> half(const s3d::Image<float>& full) {
  s3d::Image<float> out(full.width / 2, full.height / 2);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) out.at(x, y) = full.at(2 * x, 2 * y);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cuda", mode = "f2m", out, sequence;
  float depth_scale = 5000.0f;
  int frames = 300, resolution = 512;
  bool halved = false, color = false;
  s3d::fusion::FusionParams params;
  float cam[4] = {585.0f, 585.0f, 320.0f, 240.0f};  // camera-intrinsics.txt of the sequence
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--size" && i + 1 < argc)
      params.volume.size.fill(std::stof(argv[++i]));
    else if (a == "--truncation" && i + 1 < argc)
      params.volume.truncation = std::stof(argv[++i]);
    else if (a == "--truncation-growth" && i + 1 < argc)
      params.volume.truncation_growth = std::stof(argv[++i]);
    else if (a == "--max-depth" && i + 1 < argc)
      params.depth.max_depth = std::stof(argv[++i]);
    else if (a == "--huber" && i + 1 < argc)
      params.icp.huber_delta = std::stof(argv[++i]);
    else if (a == "--iterations" && i + 1 < argc) {
      int it[3] = {10, 5, 4};
      if (std::sscanf(argv[++i], "%d,%d,%d", &it[0], &it[1], &it[2]) != 3) return 2;
      params.icp.iterations = {it[0], it[1], it[2], 0, 0};
    } else if (a == "--camera" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%f,%f,%f,%f", &cam[0], &cam[1], &cam[2], &cam[3]) != 4) return 2;
    } else if (a == "--noise-weighting" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v != "on" && v != "off") return 2;
      params.icp.noise_weighting = v == "on";
    } else if (a == "--distance-gate" && i + 1 < argc)
      params.icp.distance_gate = std::stof(argv[++i]);
    else if (a == "--min-inliers" && i + 1 < argc)
      params.icp.min_inlier_ratio = std::stof(argv[++i]);
    else if (a == "--gate-sigmas" && i + 1 < argc)
      params.icp.gate_sigmas = std::stof(argv[++i]);
    else if (a == "--angle-gate" && i + 1 < argc)
      params.icp.angle_gate = std::stof(argv[++i]);
    else if (a == "--volume" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v != "dense" && v != "sparse") return 2;
      params.volume.kind = v == "sparse" ? s3d::fusion::VolumeKind::kSparse : s3d::fusion::VolumeKind::kDense;
    } else if (a == "--voxel-size" && i + 1 < argc)
      params.volume.sparse_voxel_size = std::stof(argv[++i]);
    else if (a == "--stereo-baseline" && i + 1 < argc) {
      params.icp.noise.kind = s3d::fusion::DepthNoise::Kind::kStereo;
      params.icp.noise.baseline = std::stof(argv[++i]);
    } else if (a == "--max-step" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%f,%f", &params.icp.max_translation_step, &params.icp.max_rotation_step) != 2)
        return 2;
    } else if (a == "--max-memory-mb" && i + 1 < argc)
      params.volume.sparse_memory_bytes = std::stoll(argv[++i]) << 20;
    else if (a == "--sequence" && i + 1 < argc)
      sequence = argv[++i];
    else if (a == "--depth-scale" && i + 1 < argc)
      depth_scale = std::stof(argv[++i]);
    else if (a == "--no-bilateral")
      params.depth.bilateral = false;
    else if (a == "--device" && i + 1 < argc)
      device = argv[++i];
    else if (a == "--mode" && i + 1 < argc)
      mode = argv[++i];
    else if (a == "--frames" && i + 1 < argc)
      frames = std::stoi(argv[++i]);
    else if (a == "--resolution" && i + 1 < argc)
      resolution = std::stoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--half")
      halved = true;
    else if (a == "--color")
      color = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_fusion [--device cuda|cpu] [--mode f2m|f2f] [--frames N] [--half] "
                   "[--color] [--resolution R] [--out traj.txt]\n");
      return 2;
    }
  }
  std::vector<s3d::Image<float>> depth;
  std::vector<s3d::Image<std::uint8_t>> rgb;
  if (color && halved) {
    std::fprintf(stderr, "bench_fusion: --color needs the full-size frames (no --half)\n");
    return 2;
  }
  std::vector<std::string> sequence_files;
  std::vector<double> stamps;
  if (!sequence.empty()) {
    std::ifstream list(sequence);
    std::string line;
    const std::string dir = sequence.substr(0, sequence.find_last_of('/') + 1);
    while (std::getline(list, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream in(line);
      double t = 0.0;
      std::string file;
      if (in >> t >> file) {
        stamps.push_back(t);
        sequence_files.push_back(file[0] == '/' ? file : dir + file);
      }
    }
    if (sequence_files.empty()) {
      std::fprintf(stderr, "bench_fusion: %s lists no frames\n", sequence.c_str());
      return 1;
    }
    frames = std::min<int>(frames, static_cast<int>(sequence_files.size()));
  }
  try {
    for (int f = 0; f < frames; ++f) {
      s3d::Image<float> d = sequence.empty() ? s3d::test::read_redkitchen_depth(f)
                                             : s3d::test::read_depth_png(sequence_files[f], depth_scale);
      depth.push_back(halved ? half(d) : std::move(d));
      if (color) rgb.push_back(s3d::test::read_redkitchen_color(f));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_fusion: %s (set S3D_DATA_DIR)\n", e.what());
    return 1;
  }
  params.camera = {cam[0], cam[1], cam[2], cam[3]};
  if (halved) params.camera = params.camera.level(1);
  params.mode = mode == "f2f" ? s3d::fusion::TrackingMode::kFrameToFrame : s3d::fusion::TrackingMode::kFrameToModel;
  params.volume.resolution = {resolution, resolution, resolution};
  params.volume.color = color;
  params.initial_pose = s3d::fusion::FusionParams::kinfu_initial_pose(params.volume);
  s3d::fusion::FusionEngine engine(s3d::Device::parse(device), params, depth[0].width, depth[0].height);

  std::vector<double> pre, track, integrate, raycast, total;
  std::vector<Eigen::Isometry3d> poses;
  int lost = 0, recovered = 0, invalid = 0, iterations = 0;
  for (std::size_t i = 0; i < depth.size(); ++i) {
    const s3d::fusion::FrameResult r = engine.process(depth[i].cview(), color ? rgb[i].data.data() : nullptr);
    poses.push_back(r.pose);
    lost += r.status == s3d::fusion::FrameStatus::kLost;
    recovered += r.status == s3d::fusion::FrameStatus::kRecovered;
    invalid += r.status == s3d::fusion::FrameStatus::kInvalid;
    iterations += r.iterations;
    if (r.status == s3d::fusion::FrameStatus::kFirst) continue;
    pre.push_back(r.preprocess_ms);
    track.push_back(r.track_ms);
    integrate.push_back(r.integrate_ms);
    raycast.push_back(r.raycast_ms);
    total.push_back(r.preprocess_ms + r.track_ms + r.integrate_ms + r.raycast_ms);
  }
  if (!out.empty()) {
    // The sequence's world is unknown to the engine: its poses start at KinFu's initial pose, which an SE(3)
    // alignment (ATE) absorbs.
    FILE* f = std::fopen(out.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "bench_fusion: cannot write %s\n", out.c_str());
      return 1;
    }
    for (std::size_t i = 0; i < poses.size(); ++i) {
      const Eigen::Quaterniond q(poses[i].rotation());
      const Eigen::Vector3d t = poses[i].translation();
      const double stamp = stamps.empty() ? static_cast<double>(i) / 30.0 : stamps[i];
      std::fprintf(f, "%.6f %.9f %.9f %.9f %.9f %.9f %.9f %.9f\n", stamp, t.x(), t.y(), t.z(), q.x(), q.y(), q.z(),
                   q.w());
    }
    std::fclose(f);
  }
  std::printf(
      "{\"bench\": \"fusion\", \"device\": \"%s\", \"mode\": \"%s\", \"color\": %s, \"width\": %d, \"height\": %d, "
      "\"resolution\": %d, \"volume\": \"%s\", \"noise_weighting\": %s, \"huber\": %g, \"max_depth\": %g, "
      "\"distance_gate\": %g, "
      "\"angle_gate\": %g, \"frames\": %d, "
      "\"median_ms\": {\"preprocess\": %.4f, \"track\": %.4f, \"integrate\": %.4f, \"raycast\": %.4f, "
      "\"frame\": %.4f}, \"iterations\": %d, \"lost\": %d, \"recovered\": %d, \"invalid\": %d}\n",
      engine.device().to_string().c_str(), mode.c_str(), color ? "true" : "false", depth[0].width, depth[0].height,
      resolution, params.volume.kind == s3d::fusion::VolumeKind::kSparse ? "sparse" : "dense",
      params.icp.noise_weighting ? "true" : "false", double(params.icp.huber_delta), double(params.depth.max_depth),
      double(params.icp.distance_gate), double(params.icp.angle_gate), frames, median(pre), median(track),
      median(integrate), median(raycast), median(total), iterations, lost, recovered, invalid);
  return 0;
}
