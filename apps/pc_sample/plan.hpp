#pragma once
// pc-sample's flags (per subcommand) turned into library parameters once, before any input is read, and the
// output paths an item gets (docs/PC-SAMPLE.md, "Outputs").
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/tool_files.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"
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
  int batch = 0;  // --batch B (0: the device's default)
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
/// fps --batch 0 on a GPU: clouds per launch. An H100 or H200 holds 14 clusters of KITTI-scan size at once: 70
/// clouds are 5 full waves (docs/PERFORMANCE.md, "One node").
constexpr int kGpuFpsBatch = 70;

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
  int batch = 1;              // fps: clouds per launch (0: kGpuFpsBatch on a GPU, else 1)
  bool local_origin = false;  // positions relative to the cloud's bounding-box centre (voxel grids: the file's)
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

/// The flags common to every subcommand, then the subcommand's own (command.hpp). @throws InvalidArgument naming
/// the flag (exit 2).
Plan make_plan(Mode mode, const Flags& f);

/// The output paths of one item, the main one first (the one `-o` names); derived names follow the
/// main path: `OUT.npy` -> `OUT.dist.npy`, `OUT.counts.npy` (ball, knn), `OUT.weights.npy` (interp weights),
/// `OUT.features.npy`, `OUT.point_voxel.npy` (voxel --emit voxels). rulebook: one `.npz` (or `.npy`).
/// Only the arrays asked for are listed (indices at the main path).
std::vector<std::string> planned_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan);

// ---- The flags' parsers the subcommands share. Each @throws InvalidArgument naming the flag.

/// A library message with its field names replaced by the flags' (KnnParams.k -> -k).
std::string with_flag_names(std::string message);
/// `params.validate()`, its message naming the flags instead of the library's fields.
template <class Params>
void validate_flags(const Params& params) {
  try {
    params.validate();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(with_flag_names(e.what()));
  }
}
/// --pad: -1 or first.
points::NeighborPad parse_pad(const std::string& flag, const std::string& text);
/// --emit of ball / knn: a list of indices, distances, counts.
ArrayEmit parse_arrays(const std::string& text);
/// `count` finite numbers (or one, for `count` 3, for every axis).
std::vector<float> parse_floats(const std::string& flag, const std::string& text, std::size_t count);
/// --voxel-size V or X,Y,Z, each > 0.
std::array<float, 3> parse_voxel_size(const std::string& flag, const std::string& text);
/// --kernel 3 or 3,3,3 (z, y, x): one int for all axes or three.
std::array<int, 3> parse_axes(const std::string& flag, const std::string& text);
/// The spec checked; subm's padding made explicit ((k / 2) * d).
void finish_spec(points::ConvSpec& spec);
/// --layers FILE.json: [{"kernel", "stride", "padding", "dilation", "subm", "inverse", "name"}, ...].
std::vector<RulebookLayer> read_layers(const std::string& path);
/// fps / voxel --emit: `first` or `second` (the samples), `preview`, or one of them with preview. Sets
/// plan.emit_samples and plan.emit_preview; returns the samples' name ("" for preview alone).
std::string parse_sample_emit(const std::string& given, const std::string& first, const std::string& second,
                              Plan& plan);
/// The extension an input's cloud output gets when only --output-dir names it.
std::string cloud_extension(const std::string& input, const Plan& plan);
/// --emit preview alone: the picture is the output (-o NAME.png).
std::string preview_alone(cli::ItemContext& ctx);

/// fps / voxel --emit preview beside the samples: `OUT.EXT` -> `OUT.preview.png`. @throws InvalidArgument for `-`.
std::string preview_beside(const std::string& main);

/// `OUT.npy` -> `OUT.SUFFIX.npy`. @throws InvalidArgument when `main` does not end in .npy.
std::string derived_npy(const std::string& main, const std::string& suffix);

}  // namespace s3d::pc_sample
