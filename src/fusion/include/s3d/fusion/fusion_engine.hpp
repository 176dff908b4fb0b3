#pragma once
// KinectFusion-style tracking and TSDF fusion of a depth sequence, on the CPU or on CUDA with the same
// stage order, the same reduction tree and shared math without FMA contraction, so that both backends give
// the same poses (docs/ICP-FUSE.md states what is bit-identical). This header needs no CUDA.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "s3d/core/device.hpp"
#include "s3d/core/views.hpp"
#include "s3d/fusion/params.hpp"

namespace s3d::fusion {

enum class FrameStatus {
  kFirst,      ///< the first frame: pose = initial pose, integrated
  kTracked,    ///< ICP converged and passed the loss tests
  kRecovered,  ///< the first attempt failed; re-tracking with wider gates (or, f2m, against the previous frame) passed
  kLost,       ///< both attempts failed: the pose stays the last good one, nothing is integrated
  kInvalid,    ///< the frame had no valid depth (or too few pixels): pose kept, nothing integrated
};

/// "first", "tracked", "recovered", "lost", "invalid".
const char* to_string(FrameStatus status);

/// What tracking one frame produced.
struct FrameResult {
  FrameStatus status = FrameStatus::kFirst;
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();  ///< camera to world
  std::int64_t valid_pixels = 0;                           ///< valid depth pixels of level 0
  std::int64_t inliers = 0;                                ///< associated pixels of level 0 in the last iteration
  double inlier_ratio = 0.0;                               ///< inliers / valid_pixels
  double residual = 0.0;                                   ///< RMS point-to-plane residual of the inliers, metres
  double condition = 0.0;                                  ///< of the last 6x6 system
  int iterations = 0;                                      ///< ICP iterations run, all levels
  bool frame_fallback = false;  ///< frame to model: tracked against the previous frame (the model could not)
  bool motion_start = false;    ///< ICP started from the caller's motion (process's `motion`), not the prior
  std::string reason;           ///< why a frame was lost or invalid (empty otherwise)
  /// Sparse volume (VolumeKind::kSparse) only, else 0: the blocks allocated after this frame, and the blocks
  /// this frame's depth asked for that the full pool refused (VolumeParams::sparse_memory_bytes): surfaces
  /// there are not fused, so the model stops growing.
  std::int64_t volume_blocks = 0, volume_blocks_refused = 0;
  // Milliseconds per stage (host wall clock around each stage; CUDA stages are synchronised).
  double preprocess_ms = 0.0, track_ms = 0.0, integrate_ms = 0.0, raycast_ms = 0.0;
};

/// A triangle soup or indexed mesh from marching cubes, world frame.
struct Mesh {
  std::vector<float> vertices;          ///< [V, 3]
  std::vector<float> normals;           ///< [V, 3], unit, from the TSDF gradient
  std::vector<std::uint8_t> colors;     ///< [V, 3] RGB, empty without colour (VolumeParams::color)
  std::vector<std::int32_t> triangles;  ///< [T, 3] vertex indices, counter-clockwise seen from outside
};

/// Points of the zero crossing with normals, world frame.
struct SurfaceCloud {
  std::vector<float> points;         ///< [N, 3]
  std::vector<float> normals;        ///< [N, 3]
  std::vector<std::uint8_t> colors;  ///< [N, 3] RGB, empty without colour
};

/// One engine per sequence and device; allocates its pyramid, maps and volume once.
/// Not thread-safe.
class FusionEngine {
 public:
  /// @throws InvalidArgument (params, size), DeviceUnavailable, OutOfMemory (the volume).
  FusionEngine(const Device& device, const FusionParams& params, int width, int height);
  ~FusionEngine();
  FusionEngine(FusionEngine&&) noexcept;
  FusionEngine& operator=(FusionEngine&&) noexcept;

  /// Tracks one frame (depth in metres, host memory, width x height; 0, NaN, inf and out-of-range values
  /// are invalid) and integrates it when tracked. `rgb` (optional, host memory): the frame's colour image,
  /// width x height x 3 bytes dense, registered to the depth (its pixel (x, y) sees what depth pixel (x, y)
  /// sees); used only when params.volume.color is set. Never throws for a bad frame: it comes back kInvalid or
  /// kLost. `motion` (optional): the camera's motion since the last good frame, measured by other means (its
  /// pose in that frame's camera, e.g. estimate_feature_motion); ICP starts from it instead of the motion prior,
  /// and the step limits are taken from it. @throws InvalidArgument for a frame of another size, CudaError.
  FrameResult process(ImageView<const float> depth_m, const std::uint8_t* rgb = nullptr,
                      const std::optional<Eigen::Isometry3d>& motion = std::nullopt);

  /// Whether the next frame's ICP has a measured motion to start from: false before the first tracked step
  /// (after the first frame or reset()), after more than two lost frames in a row, and without
  /// IcpParams::motion_prior. Then a caller with another source of motion should pass it to process().
  bool knows_motion() const;

  /// Fusion with a given pose, no tracking (e.g. ground-truth poses).
  FrameResult integrate_with_pose(ImageView<const float> depth_m, const Eigen::Isometry3d& camera_to_world,
                                  const std::uint8_t* rgb = nullptr);

  /// Marching cubes over the volume (iso 0, cubes with a zero-weight corner skipped), indexed vertices in a
  /// deterministic order (by cube linear index, then edge).
  Mesh extract_mesh() const;
  /// Zero crossings along the three axes (KinFu's `fetchCloud`), deterministic order. Meshes and clouds carry
  /// vertex colours when params.volume.color is set.
  SurfaceCloud extract_cloud() const;

  /// Drops the model and the trajectory; the next frame is a first frame again.
  void reset();

  const Eigen::Isometry3d& pose() const;
  const FusionParams& params() const;
  const Device& device() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace s3d::fusion
