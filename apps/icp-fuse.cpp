// icp-fuse: KinectFusion-style registration and fusion of depth sequences (docs/ICP-FUSE.md). Options and
// one item per sequence: the frame's workers list each sequence (icp_fuse/job), the handler tracks and fuses
// its frames on the run's device in input order (s3d::fusion), and the workers write the trajectory, the
// per-frame records, the mesh and cloud, and the evaluation against a ground truth.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "icp_fuse/job.hpp"
#include "icp_fuse/plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"

using s3d::icp_fuse::Fused;
using s3d::icp_fuse::Sequence;

namespace {

/// How the sequences are read: depth units, camera, frames, timestamps.
void add_input_flags(CLI::App& app, s3d::icp_fuse::Flags& f) {
  const char* in_group = "Input";
  app.add_option("--depth-scale", f.depth_scale,
                 "depth units per metre: mm (1000), tum (5000; TUM RGB-D, ICL-NUIM) or a number "
                 "(default: 5000 for a TUM RGB-D depth.txt with its `# depth maps` header, else 1000 for PNG, "
                 "1 for PFM)")
      ->group(in_group);
  app.add_option(
         "--intrinsics", f.intrinsics,
         "fx,fy,cx,cy in pixels, a 3x3 K file (7-Scenes camera-intrinsics.txt), TUM `fx fy cx cy`, or a "
         "KITTI/Q stereo calibration (its left camera), or tum (525,525,319.5,239.5: TUM RGB-D's depth, 640x480); "
         "default: the sequence's camera-intrinsics.txt, tum for a TUM RGB-D folder (depth.txt)")
      ->type_name("SPEC")
      ->group(in_group);
  app.add_option("--frames", f.frames, "only frames A..B-1 of each sequence (0-based, half-open; A: or :B)")
      ->type_name("A:B")
      ->group(in_group);
  app.add_option("--fps", f.fps, "frame rate for the timestamps of sequences without any (index / fps)")
      ->capture_default_str()
      ->group(in_group);
}

/// The tracking mode, the depth range and the TSDF volume.
void add_volume_flags(CLI::App& app, s3d::icp_fuse::Flags& f) {
  const char* track_group = "Tracking and fusion";
  app.add_option("--mode", f.mode, "f2m: frame to model (KinFu, ray cast of the TSDF); f2f: frame to frame")
      ->capture_default_str()
      ->check(CLI::IsMember({"f2m", "f2f"}))
      ->group(track_group);
  app.add_option("--max-depth", f.max_depth, "metres; deeper pixels are invalid (0 = no limit)")
      ->capture_default_str()
      ->group(track_group);
  app.add_option("--volume", f.volume,
                 "sparse: TSDF blocks of 8^3 voxels allocated where depth is seen, unbounded in extent (a hash of "
                 "blocks, InfiniTAM-style); dense: one cube of --volume-resolution^3 voxels, --volume-size metres "
                 "per side, in front of the first camera (KinFu)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sparse", "dense"}))
      ->type_name("sparse|dense")
      ->group(track_group);
  app.add_option("--volume-size", f.volume_size, "dense: TSDF cube side, metres")
      ->capture_default_str()
      ->group(track_group);
  app.add_option("--volume-resolution", f.volume_resolution, "dense: TSDF voxels per side")
      ->capture_default_str()
      ->group(track_group);
  app.add_option("--voxel-size", f.voxel_size,
                 "sparse: voxel edge, metres (0 = --volume-size / --volume-resolution, 5.9 mm by default)")
      ->capture_default_str()
      ->group(track_group);
  app.add_option("--max-memory", f.max_memory,
                 "sparse: memory for the TSDF blocks (2 KiB a block, 4 KiB with colour), allocated once; when it is "
                 "full, new blocks are refused, the nearest to the camera first kept")
      ->capture_default_str()
      ->type_name("BYTES[K|M|G]")
      ->group(track_group);
  app.add_option("--truncation", f.truncation, "TSDF truncation distance, metres")
      ->capture_default_str()
      ->group(track_group);
  app.add_option("--truncation-growth", f.truncation_growth,
                 "metres of truncation added per metre of depth (deep depth is noisier): a pixel of depth d is "
                 "truncated at --truncation + GROWTH * d, at most 4 x --truncation (0 = constant)")
      ->capture_default_str()
      ->group(track_group);
}

/// ICP: iterations, robust and photometric terms, noise, motion, the loss tests.
void add_tracking_flags(CLI::App& app, s3d::icp_fuse::Flags& f) {
  const char* in_group = "Input";
  const char* track_group = "Tracking and fusion";
  app.add_option("--icp-iterations", f.icp_iterations, "ICP iterations per pyramid level, finest first (1-5 levels)")
      ->capture_default_str()
      ->type_name("N,N,N")
      ->group(track_group);
  app.add_option("--huber", f.huber, "Huber threshold on the point-to-plane residual, metres (0 = off)")
      ->capture_default_str()
      ->group(track_group);
  app.add_option("--photometric", f.photometric,
                 "add a photometric term to ICP: each inlier's grey level must match what the previous frame shows "
                 "at its projection, with grey-level noise SIGMA (0..1; 0.02 a good start; 0 = off). It sees motion "
                 "along roads, walls and corridors, which depth alone cannot; needs the frames' images (rgb.txt, "
                 "frame-*.color.*, or --images)")
      ->capture_default_str()
      ->type_name("SIGMA")
      ->group(track_group);
  app.add_option("--images", f.images,
                 "a folder of the frames' colour or grey images, registered to the depth: each depth frame takes the "
                 "image of its name (000000_depth.pfm <- 000000.png: the left images sgm-depth matched), else, as "
                 "many as frames, the images in name order; for --photometric and the vertex colours")
      ->type_name("DIR")
      ->group(track_group);
  app.add_option("--noise-weighting", f.noise_weighting,
                 "weight each ICP residual by its inverse variance: depth noise at its depth (Kinect's model, "
                 "sigma = 1.2 mm + 1.9 mm (z - 0.4 m)^2), plus in f2m the model's voxel quantisation (voxel / "
                 "sqrt(12)); off = KinFu's plain least squares")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}))
      ->type_name("on|off")
      ->group(track_group);
  app.add_option("--depth-noise", f.depth_noise,
                 "the depth's noise model, for the ICP weights and the distance gate of deep points: kinect "
                 "(structured light), or stereo:BASELINE_M[,DISPARITY_SIGMA_PX] for depth from disparity "
                 "(sigma = z^2 sigma_d / (fx B), sigma_d 0.25 px by default)")
      ->capture_default_str()
      ->type_name("MODEL")
      ->group(track_group);
  app.add_option("--motion-prior", f.motion_prior,
                 "start each frame's ICP from the constant-velocity prediction (on) or from the last pose (off)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}))
      ->type_name("on|off")
      ->group(track_group);
  app.add_option("--feature-start", f.feature_start,
                 "where no motion is known yet (the first step, after lost frames), start ICP from the motion "
                 "that ORB features matched between the last good frame and this one give (PnP RANSAC on the "
                 "last frame's depth); needs the frames' images (--photometric or colour)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}))
      ->type_name("on|off")
      ->group(track_group);
  app.add_option("--max-step", f.max_step,
                 "a frame whose pose lands farther than METRES or DEGREES from its prediction is lost (a car at "
                 "10 Hz: 2,10)")
      ->capture_default_str()
      ->type_name("M,DEG")
      ->group(track_group);
  app.add_option("--min-inliers", f.min_inliers,
                 "a frame with fewer ICP inliers than this fraction of its valid pixels is lost")
      ->capture_default_str()
      ->group(track_group);
  app.add_option("--max-lost", f.max_lost,
                 "a sequence with more than this fraction of its frames lost fails (exit 1, no outputs); 1 = never")
      ->capture_default_str()
      ->group(track_group);
}

/// What is written and how it is evaluated.
void add_output_flags(CLI::App& app, s3d::icp_fuse::Flags& f) {
  const char* out_group = "Output and evaluation";
  app.add_option("--emit", f.emit,
                 "outputs in each sequence's folder: trajectory (trajectory.txt, always written), mesh "
                 "(mesh.ply), cloud (cloud.ply), plot (trajectory.png; with --eval also ape.png: the APE over time); "
                 "frames.jsonl is always written")
      ->capture_default_str()
      ->group(out_group);
  app.add_option("--color", f.color,
                 "vertex colours of mesh.ply / cloud.ply from the sequence's colour frames (rgb.txt, "
                 "frame-*.color.*), taken as registered to the depth: auto = when the sequence lists them, on = "
                 "required, off = never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->type_name("auto|on|off")
      ->group(out_group);
  app.add_option("--eval", f.eval,
                 "score the trajectory against a TUM ground truth: ATE RMSE (SE(3) Horn) and RPE per frame and per "
                 "second, then evo's APE and RPE blocks (per frame, per metre), printed and in the record; `auto`: the "
                 "sequence's groundtruth.txt or its "
                 "frame-*.pose.txt")
      ->type_name("FILE|auto")
      ->group(out_group);
  app.add_option("--eval-ranges", f.eval_ranges,
                 "with --eval: ATE also over these frame ranges of each sequence, each aligned on its own "
                 "(e.g. 0:122,122:300)")
      ->type_name("A:B,...")
      ->group(out_group);
  app.add_option("--eval-align", f.eval_align,
                 "with --eval: the evo blocks' alignment of the estimate onto the ground truth: se3 (evo -a), sim3 "
                 "(evo -as, for monocular scale) or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "se3", "sim3"}))
      ->type_name("none|se3|sim3")
      ->group(out_group);
  app.add_option("--eval-relation", f.eval_relation,
                 "with --eval: the evo blocks' pose relation (evo -r): trans_part (m), rot_part, angle_deg, "
                 "angle_rad or full")
      ->capture_default_str()
      ->check(CLI::IsMember({"trans_part", "rot_part", "angle_deg", "angle_rad", "full"}))
      ->type_name("RELATION")
      ->group(out_group);
  app.add_option("--eval-max-diff", f.eval_max_diff,
                 "with --eval: seconds within which the evo blocks associate timestamps (evo --t_max_diff)")
      ->capture_default_str()
      ->group(out_group);
  app.add_option("--save-results", f.save_results,
                 "with --eval: write the APE as evo's results archive (evo_res reads it), in each sequence's folder "
                 "when the name is relative")
      ->type_name("FILE.zip")
      ->group(out_group);
  app.add_option("--trajectory-format", f.trajectory_format,
                 "trajectory.txt as TUM lines (timestamp tx ty tz qx qy qz qw) or KITTI 3x4 poses (12 numbers a line)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tum", "kitti"}))
      ->type_name("tum|kitti")
      ->group(out_group);
}

}  // namespace

int main(int argc, char** argv) {
  s3d::cli::Tool tool("icp-fuse",
                      "KinectFusion-style tracking (projective point-to-plane ICP) and TSDF fusion of depth "
                      "sequences: TUM trajectory, mesh and cloud PLY, ATE/RPE evaluation, on GPU or CPU",
                      s3d::cli::ItemSpec{1, {"input"}});
  s3d::icp_fuse::Flags f;
  CLI::App& app = tool.app();
  add_input_flags(app, f);
  add_volume_flags(app, f);
  add_tracking_flags(app, f);
  add_output_flags(app, f);
  tool.add_example("icp-fuse --device cpu 7scenes/redkitchen -o out --eval auto",
                   "one sequence into out/ (trajectory.txt, mesh.ply, frames.jsonl), scored against its poses");
  tool.add_example(
      "icp-fuse rgbd_dataset_freiburg1_xyz --eval auto -o fr1_xyz",
      "a TUM RGB-D folder (depth.txt: x5000 depth, the benchmark's depth intrinsics, its groundtruth.txt)");
  tool.add_example("icp-fuse --manifest seqs.jsonl --output-dir runs --emit trajectory,cloud --json > runs.jsonl",
                   "several sequences, one subfolder each, JSON records");

  s3d::icp_fuse::Plan plan;
  bool planned = false;
  auto ensure_plan = [&] {
    if (!planned) plan = s3d::icp_fuse::make_plan(f);
    planned = true;
  };
  // A positional sequence: checked before any item runs, so that missing intrinsics is a usage error.
  tool.expand_arguments([&](const std::string& arg) -> std::optional<std::vector<nlohmann::json>> {
    ensure_plan();
    std::error_code ec;
    if (!std::filesystem::exists(arg, ec)) return std::nullopt;  // the item fails with the reader's message
    const auto listing = s3d::io::list_rgbd_sequence(arg, plan.fps);
    s3d::cli::Item probe;
    probe.inputs = {arg};
    probe.fields = nlohmann::json::object();
    s3d::icp_fuse::intrinsics_source(listing, probe, plan);
    return std::nullopt;
  });
  tool.on_start([&](const s3d::Device&) {
    ensure_plan();
    const auto& s = tool.settings();
    if (s.outputs.empty() && s.output_dir.empty())
      throw s3d::InvalidArgument("no output: give -o DIR (one sequence, or a template) or --output-dir DIR");
    for (const auto& o : s.outputs)
      if (o == "-") throw s3d::InvalidArgument("-o -: icp-fuse writes a folder per sequence, not to stdout");
    if (s.outputs.size() > 1) throw s3d::InvalidArgument("-o: give one output folder (or template)");
  });
  tool.aggregate(s3d::cli::sum_of({"frames", "frames_done", "unreadable"}, "totals"));
  tool.aggregate(s3d::icp_fuse::add_eval_summary);
  tool.outputs_of([&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    return s3d::icp_fuse::planned_outputs(s3d::icp_fuse::output_folder(item, ctx, tool.settings()), plan);
  });

  s3d::cli::Stages<Sequence, Fused> stages;
  stages.load = [&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    s3d::cli::StageTimer timer(ctx, "list");
    return s3d::icp_fuse::load_sequence(item, ctx, plan);
  };
  stages.handle = [&](const s3d::cli::Item& item, Sequence& seq, s3d::cli::ItemContext& ctx,
                      s3d::cli::NextItem<Sequence>) {
    return s3d::icp_fuse::fuse_sequence(item, seq, ctx, plan, tool.settings());
  };
  stages.write = [&](const s3d::cli::Item& item, Fused& fused, s3d::cli::ItemContext& ctx) {
    return s3d::icp_fuse::write_fused(item, fused, ctx, plan, tool.settings());
  };
  return tool.run(argc, argv, std::move(stages));
}
