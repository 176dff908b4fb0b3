#pragma once
// pc-sample's flags (per subcommand) turned into library parameters once, before any input is read, and the
// output paths an item gets (docs/PC-SAMPLE.md, "Outputs").
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/io/point_cloud_io.hpp"
#include "s3d/points/neighbors.hpp"
#include "s3d/points/rulebook.hpp"
#include "s3d/points/voxels.hpp"

namespace s3d::pc_sample {

enum class Mode { kFps, kBall, kKnn, kInterp, kVoxel, kRulebook };

/// The flags as given (each subcommand binds its own).
struct Flags {
  // common to the subcommands
  bool drop_invalid = false;
  std::string input_format = "auto";
  // fps
  std::int64_t samples = 0;  // -n
  std::string ratio;         // --ratio (empty: not given)
  std::string start;         // a row of the file, `random`, or empty: the first point kept
  std::string seed = "0";    // --seed: a whole number in [0, 2^64)
  bool allow_fewer = false;
  bool fps_drop_faces = false;
  std::string fps_emit = "cloud";
  int batch = 1;  // --batch B
  // ball
  float radius = 0.0f;
  float min_radius = 0.0f;
  int ball_k = 32;
  std::string ball_pad = "-1";
  std::string order = "index";
  std::string ball_queries;
  std::string ball_emit = "indices,distances,counts";
  // knn
  int knn_k = 16;
  bool exclude_self = false;
  std::string knn_pad;  // empty = K > N is an error
  std::string knn_queries;
  std::string knn_emit = "indices,distances,counts";
  // interp
  std::string from;
  std::string attributes;  // comma list, empty = default choice
  bool interp_drop_faces = false;
  std::string interp_emit = "cloud";
  // voxel
  std::string voxel_size;  // V or X,Y,Z
  std::string voxel_origin = "world";
  std::string voxel_range;  // x0,y0,z0,x1,y1,z1
  int max_points_per_voxel = 0;
  std::int64_t max_voxels = 0;
  int min_points = 1;
  std::string voxel_aggregate = "mean";
  std::string voxel_emit = "cloud";
  // rulebook
  std::string rb_shape;       // Z,Y,X (.npy coordinates)
  int rb_batch_size = 0;      // 0 = max batch id + 1
  std::string rb_voxel_size;  // V or X,Y,Z: the input is a cloud
  std::string rb_kernel = "3";
  std::string rb_stride = "1";
  std::string rb_padding;  // empty: 0, or (k / 2) * d with --subm
  std::string rb_dilation = "1";
  bool rb_subm = false;
  bool rb_inverse = false;
  std::string rb_layers;  // FILE.json
};

/// One sparse convolution of `pc-sample rulebook` (docs/PC-SAMPLE.md, "Rulebooks").
using points::RulebookLayer;

/// The neighbour arrays ball/knn write.
struct ArrayEmit {
  bool indices = false, distances = false, counts = false;
  int count() const { return int(indices) + int(distances) + int(counts); }
};

/// Flags checked and turned into library settings.
struct Plan {
  Mode mode = Mode::kFps;
  io::CloudFormat input_format = io::CloudFormat::kAuto;
  bool drop_invalid = false;
  // fps
  std::int64_t samples = 0;  // 0 = from ratio
  double ratio = 0.0;
  bool random_start = false;
  std::int64_t start = -1;  // a row of the file; -1: the first point kept
  std::uint64_t seed = 0;
  bool allow_fewer = false;
  bool emit_indices = false;  // fps: indices instead of the cloud
  bool emit_samples = true;   // fps / voxel: the samples are written (false: --emit preview alone)
  bool emit_preview = false;  // fps / voxel: a top-down picture of the cloud with the samples marked
  int batch = 1;              // fps: clouds per launch
  // ball / knn
  points::BallQueryParams ball;
  points::KnnParams knn;
  std::string queries;  // "" = the cloud itself
  ArrayEmit arrays;
  // interp
  std::string from;
  std::vector<std::string> attributes;  // empty = every numeric sparse column the dense cloud lacks
  bool emit_weights = false;
  bool drop_faces = false;
  // voxel
  points::VoxelizeParams voxel;
  bool emit_voxels = false;  // coordinates, features and the point -> voxel map instead of the cloud
  // rulebook
  std::vector<RulebookLayer> layers;
  bool chained = false;                 // --layers: arrays prefixed by the layer's name
  bool rulebook_from_cloud = false;     // --voxel-size: voxelise the cloud (voxel holds the parameters)
  std::array<std::int32_t, 3> shape{};  // .npy coordinates: --shape
  int rulebook_batch_size = 0;          // 0 = max batch id + 1
};

/// @throws InvalidArgument naming the flag (exit 2).
Plan make_plan(Mode mode, const Flags& f);

/// The output paths of one item, the main one first (the one `-o` names); derived names follow the
/// main path: `OUT.npy` -> `OUT.dist.npy`, `OUT.counts.npy` (ball, knn), `OUT.weights.npy` (interp weights),
/// `OUT.features.npy`, `OUT.point_voxel.npy` (voxel --emit voxels). rulebook: one `.npz` (or `.npy`).
/// Only the arrays asked for are listed (indices at the main path).
std::vector<std::string> planned_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan);

/// fps / voxel --emit preview beside the samples: `OUT.EXT` -> `OUT.preview.png`. @throws InvalidArgument for `-`.
std::string preview_beside(const std::string& main);

/// `OUT.npy` -> `OUT.SUFFIX.npy`. @throws InvalidArgument when `main` does not end in .npy.
std::string derived_npy(const std::string& main, const std::string& suffix);

}  // namespace s3d::pc_sample
