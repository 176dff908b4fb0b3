#pragma once
// Parameters of KinectFusion-style tracking and fusion. Defaults are PCL KinFu's except the ICP's depth-noise
// weighting (docs/ICP-FUSE.md lists them with their sources). Lengths are metres, angles degrees. This header needs no
// CUDA.
#include <array>
#include <cstdint>

#include <Eigen/Geometry>

namespace s3d::fusion {

/// Pinhole intrinsics of the depth camera at full resolution (level 0), pixels. Level l divides fx, fy, cx
/// and cy by 2^l (KinFu). fy may be negative (ICL-NUIM).
struct CameraIntrinsics {
  float fx = 525.0f;
  float fy = 525.0f;
  float cx = 319.5f;
  float cy = 239.5f;
  /// The intrinsics of pyramid level `level`.
  CameraIntrinsics level(int level) const {
    const float s = 1.0f / static_cast<float>(1 << level);
    return {fx * s, fy * s, cx * s, cy * s};
  }
};

/// Depth pre-processing.
struct DepthParams {
  float min_depth = 0.0f;  ///< metres; depths <= min_depth are invalid
  float max_depth = 0.0f;  ///< metres; depths > max_depth are invalid (0 = no limit)
  bool bilateral = true;   ///< KinFu's 13x13 bilateral filter before the pyramid (the raw depth is integrated)
  int bilateral_radius = 6;
  float sigma_space = 4.5f;    ///< pixels
  float sigma_depth = 0.03f;   ///< metres
  int levels = 3;              ///< pyramid levels, each half the size of the one above, in [1, 5]
  float pyramid_gate = 0.09f;  ///< pyrDown averages only pixels within this many metres of the centre (3 sigma)
};

/// The axial depth noise of the sensor, sigma(z) = a + b max(z - z0, 0)^2 metres at depth z, which weights the
/// ICP rows (IcpParams::noise_weighting) and widens the distance gate of deep points (IcpParams::gate_sigmas).
struct DepthNoise {
  enum class Kind {
    kKinect,  ///< structured light: a = 1.2 mm, b = 1.9 mm/m^2, z0 = 0.4 m (Nguyen, Izadi, Lovell 2012)
    kStereo,  ///< depth from disparity: sigma = z^2 sigma_d / (f B) (a = 0, z0 = 0, b = sigma_d / (f B))
  };
  Kind kind = Kind::kKinect;
  float baseline = 0.0f;          ///< metres, kStereo only (f is the camera's fx)
  float disparity_sigma = 0.25f;  ///< pixels, kStereo only: the matcher's disparity noise
};

/// Projective point-to-plane ICP.
struct IcpParams {
  /// Iterations per level, finest first (run coarse to fine).
  std::array<int, 5> iterations{10, 5, 4, 0, 0};
  float distance_gate = 0.10f;  ///< metres, on |R v + t - v_model| at level 0
  /// The distance gate grows by this factor per pyramid level (level l: distance_gate * growth^l): a coarse
  /// pixel spans 2^l fine ones, and the coarse levels must pull in a large step.
  float gate_level_growth = 2.0f;
  /// The distance gate of a point is at least this many depth-noise sigmas at its depth (DepthNoise), so that
  /// deep stereo points (sigma 0.15 m at 15 m on KITTI) are not all rejected; 0 = a fixed gate.
  float gate_sigmas = 3.0f;
  float angle_gate = 20.0f;  ///< degrees, on |R n x n_model| < sin(angle)
  /// Huber weights on the point-to-plane residual (0 = plain least squares), metres.
  float huber_delta = 0.0f;
  /// Weights each point-to-plane row by the inverse variance of its residual: the depth noise (`noise`) at the
  /// current point's depth plus, frame to model, the model's voxel quantisation (voxel / sqrt(12)) in
  /// quadrature. Kinect relative weights (f2f): 1 at 0.4 m, 0.12 at 1.5 m, 0.0073 at 3 m. Off = KinFu's
  /// unweighted least squares.
  bool noise_weighting = true;
  DepthNoise noise;
  /// A photometric term beside point-to-plane (0 = off): each inlier also asks that the grey level the reference
  /// frame shows at its projection equals its own (grey levels in [0, 1], from the frames' colour images), with
  /// the weight of an intensity noise of this sigma relative to the depth noise's at its reference depth. Depth
  /// alone cannot see motion along a road, a wall or a corridor; texture can. Frames without a colour image, and
  /// the frame after one, track on depth alone.
  float photometric_sigma = 0.0f;
  /// Start each frame's ICP from the constant-velocity prediction (the last good pose moved by the last
  /// frame-to-frame motion) instead of the last pose.
  bool motion_prior = true;
  /// Frame to model: a frame that the model cannot track (e.g. the model covers too little of the view) is
  /// tracked against the previous tracked frame before it is declared lost.
  bool frame_fallback = true;
  // Tracking-loss tests, applied after the last iteration.
  /// Inliers / valid pixels of level 0 (KinFu has no such test; 0.2: a model that covers less of the view than
  /// that tracks worse than the previous frame does, see docs/ACCURACY.md).
  float min_inlier_ratio = 0.2f;
  double max_condition = 1e6;  ///< of the final 6x6 system (ratio of extreme eigenvalues)
  /// Metres and degrees between the tracked pose and its prediction (the last pose moved by the last motion
  /// with motion_prior, else the last pose): a larger jump is a failed registration, not motion.
  float max_translation_step = 0.20f;
  float max_rotation_step = 30.0f;
};

/// Which TSDF volume the engine keeps.
enum class VolumeKind {
  kDense,   ///< one cube of resolution^3 voxels (KinFu): everything outside it is lost
  kSparse,  ///< blocks of 8^3 voxels allocated where depth is seen, found through a hash (InfiniTAM, nvblox)
};

/// The TSDF volume.
///
/// Dense (the default): resolution^3 voxels over a cube of `size` metres per side whose corner sits at `origin`
/// (world frame). Voxel (i, j, k) is centred at origin + ((i, j, k) + 0.5) * size / resolution (KinFu).
///
/// Sparse: voxels of `sparse_voxel_size` metres on the world lattice, voxel (i, j, k) (any int) centred at
/// ((i, j, k) + 0.5) * sparse_voxel_size, so a dense volume with origin 0 and the same voxel size has its voxels
/// at the same points. They are stored in blocks of 8^3 voxels (block (a, b, c) holds voxels 8a..8a+7, ...),
/// allocated along each valid depth pixel's ray over [depth - truncation, depth + truncation], from a pool
/// sized once from `sparse_memory_bytes`. Block coordinates must lie in [-2^20, 2^20) (about +-49 km at the
/// default voxel); depth beyond that is not stored. When the pool is full, further blocks are refused (not
/// evicted): the nearest to the camera are allocated first, the rest counted. resolution, size and origin are
/// not used by the sparse volume (the engine's default first pose still reads them).
/// The depth-grown truncation stops at this multiple of VolumeParams::truncation.
constexpr float kMaxTruncationGrowth = 4.0f;

struct VolumeParams {
  std::array<int, 3> resolution{512, 512, 512};
  std::array<float, 3> size{3.0f, 3.0f, 3.0f};
  std::array<float, 3> origin{0.0f, 0.0f, 0.0f};
  float truncation = 0.03f;  ///< metres, at least min_truncation()
  /// Metres of truncation added per metre of a pixel's depth d (Niessner et al., "Real-time 3D Reconstruction at
  /// Scale using Voxel Hashing", 2013): a sample of depth d is truncated at min(truncation + truncation_growth * d,
  /// kMaxTruncationGrowth * truncation), so that deep, noisy depth still forms one zero crossing. In [0, 1]; 0
  /// keeps the truncation constant (KinFu). Default 0.01 (docs/ICP-FUSE.md, Truncation).
  float truncation_growth = 0.01f;
  int max_weight = 128;
  /// Keep a colour per voxel (4 more bytes each): frames integrated with an RGB image registered to the depth
  /// update it, meshes and clouds get vertex colours.
  bool color = false;
  /// Dense or sparse (above). Default dense.
  VolumeKind kind = VolumeKind::kDense;
  /// Sparse only: voxel edge, metres, in [1e-4, 1]. Default 3 m / 512, the default dense volume's voxel.
  float sparse_voxel_size = 3.0f / 512.0f;
  /// Sparse only: bytes for the block pool (2 KiB a block, 4 KiB with colour), the blocks' coordinates and the
  /// hash tables and the list of a frame's visible blocks (at most 128 bytes a block), all allocated at construction;
  /// at least one block's worth (sparse_block_bytes), at most 2^40. Default 512 MiB, the voxels of the default dense
  /// volume: about 247,000 blocks (127 M voxels), 127,000 with colour. A frame's allocation scratch (the blocks each
  /// depth pixel's ray crosses) is not counted.
  std::int64_t sparse_memory_bytes = std::int64_t{512} << 20;
  /// Sparse only: the ray cast marches each pixel's ray from the camera centre to this distance, metres, in
  /// (0, 10^4] and at most 10^6 truncations. Default 30 m.
  float sparse_raycast_range = 30.0f;

  /// The one check of these fields, by the engine and by each volume: resolution in [1, 4096] per axis and
  /// fewer than 2^31 voxels (int32 indices), the rest as documented above. @throws InvalidArgument naming the field.
  void validate() const;

  float voxel_size(int axis) const { return size[axis] / static_cast<float>(resolution[axis]); }
  /// The voxel edge of either kind, metres: sparse_voxel_size, or the dense volume's largest voxel_size(axis).
  float voxel_edge() const {
    if (kind == VolumeKind::kSparse) return sparse_voxel_size;
    const float x = voxel_size(0), y = voxel_size(1), z = voxel_size(2);
    const float xy = x > y ? x : y;
    return xy > z ? xy : z;
  }
  /// 10^-6 of the summed sides: the ray cast marches in steps of 0.8 * truncation up to 3 * (sum of the
  /// sides), and a smaller step would not advance the float march.
  /// The largest truncation a sample can get: truncation, or kMaxTruncationGrowth times it with truncation_growth.
  float max_truncation() const;
  double min_truncation() const {
    return 1e-6 * ((static_cast<double>(size[0]) + static_cast<double>(size[1])) + static_cast<double>(size[2]));
  }
};

/// Bytes one block of the sparse volume costs in its memory budget (VolumeParams::sparse_memory_bytes): its
/// voxels, coordinates and hash entries. The pool holds sparse_memory_bytes / sparse_block_bytes(color) blocks.
std::int64_t sparse_block_bytes(bool color);

enum class TrackingMode {
  kFrameToModel,  ///< ICP against the maps ray cast from the TSDF at the previous pose (KinFu)
  kFrameToFrame,  ///< ICP against the previous frame's own vertex and normal maps
};

struct FusionParams {
  CameraIntrinsics camera;
  DepthParams depth;
  IcpParams icp;
  VolumeParams volume;
  TrackingMode mode = TrackingMode::kFrameToModel;
  /// Pose of the first frame, camera to world. Default: KinFu's, the volume centre in x and y and
  /// 0.6 * size behind the centre in z, looking along +z.
  Eigen::Isometry3d initial_pose = kinfu_initial_pose(VolumeParams{});
  /// Integrate every frame into the TSDF (also in f2f mode, so that a model can be written).
  bool integrate = true;

  static Eigen::Isometry3d kinfu_initial_pose(const VolumeParams& volume);
  /// @throws InvalidArgument naming the field.
  void validate() const;
};

}  // namespace s3d::fusion
