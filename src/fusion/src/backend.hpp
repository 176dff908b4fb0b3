#pragma once
// Internal: the two halves of a fusion backend, each implemented once for the CPU (the oracle) and once
// for CUDA. FusionEngine (fusion_engine.cpp) owns one of each, on the same device, and runs the stages in
// the same order on both. Pointers in Maps and ImageView here address the backend's memory (host for the
// CPU backend, device for CUDA). No CUDA types here.
#include <cstdint>
#include <memory>
#include <vector>

#include "fusion_math.hpp"
#include "icp_step_math.hpp"
#include "s3d/core/device.hpp"
#include "s3d/core/views.hpp"
#include "s3d/fusion/fusion_engine.hpp"
#include "s3d/fusion/params.hpp"

namespace s3d::fusion::detail {

/// Vertex and normal maps of one pyramid level, dense (pitch = width); invalid entries have x = NaN.
struct Maps {
  Vec3f* vertices = nullptr;
  Vec3f* normals = nullptr;
  int width = 0;
  int height = 0;
};

/// Host copies of one level's maps (tests, f2f bookkeeping).
struct HostMaps {
  int width = 0, height = 0;
  std::vector<Vec3f> vertices, normals;
};

/// The 6x6 point-to-plane system of one ICP iteration: A = sum r^T r (upper triangle, row-major, 21
/// values), g = sum r^T b, plus the sum of squared residuals and the inlier count. The reduction tree is
/// fixed and identical on both backends, so these come out bit-identical.
struct IcpSystem {
  double a[21] = {};
  double g[6] = {};
  double residual_sq = 0.0;
  std::int64_t inliers = 0;
};

/// The grey levels of one pyramid level for the photometric term (backend memory, level size, dense): the
/// current frame's and the reference camera's own frame's with its gradients.
struct GreyMaps {
  const float* current = nullptr;
  const float* reference = nullptr;
  const float* reference_gx = nullptr;
  const float* reference_gy = nullptr;
};

struct IcpGates {
  float distance = 0.10f;             ///< metres, at level 0
  float level_growth = 1.0f;          ///< the distance gate at level l is distance * level_growth^l
  float gate_sigmas = 0.0f;           ///< the distance gate is at least gate_sigmas * noise sigma(z)
  float sin_angle = 0.342f;           ///< |n_cur x n_ref| must be below this
  float huber_delta = 0.0f;           ///< 0 = off
  bool noise_weighting = true;        ///< depth_noise_weight on each row
  NoiseModel noise = kinect_noise();  ///< sigma(z) for the weights and the gate
  float model_sigma = 0.0f;           ///< metres, the reference's own error, added to the depth noise in quadrature
  float photometric_weight = 0.0f;    ///< of the photometric term (IcpInputs); 0 = off
};

/// One ICP attempt: every level from the coarsest, params.icp.iterations[level] iterations each, from `start`.
struct IcpRequest {
  IcpPose start;             ///< camera to world
  Rigid world_to_reference;  ///< world to the reference camera
  IcpGates gates;
  /// Against the maps kept by keep_previous_frame instead of the reference maps (frame to model's fallback).
  bool previous_frame = false;
};

/// Depth pre-processing, pyramids, vertex/normal maps and the ICP reduction.
class TrackingBackend {
 public:
  virtual ~TrackingBackend() = default;
  /// Uploads a depth frame (metres, host memory, the engine's size), marks invalid values (0, NaN, inf,
  /// <= min_depth, > max_depth) as 0, filters, builds the pyramid and each level's vertex and normal maps
  /// in the camera frame. Returns the valid pixels of level 0.
  virtual std::int64_t preprocess(ImageView<const float> depth_m) = 0;
  /// The current frame's grey levels (host memory, the engine's size, dense, in [0, 1]) and their pyramid
  /// (2x2 means), for the photometric term. Only with params.icp.photometric_sigma > 0.
  virtual void preprocess_grey(const float* grey) = 0;
  /// The current frame's grey pyramid becomes the reference's, with its gradients (grey_gradient_pixel).
  virtual void keep_reference_grey() = 0;
  /// The grey maps of `level` (all null when the photometric term is off).
  virtual GreyMaps grey_maps(int level) = 0;
  /// The unfiltered, validity-masked depth of level 0 (0 = invalid), what the volume integrates.
  virtual ImageView<const float> raw_depth() const = 0;
  /// The current frame's maps of `level`, camera frame.
  virtual Maps frame_maps(int level) = 0;
  /// The reference maps of `level`, world frame. Level 0 is written by the volume's ray cast (f2m) or by
  /// reference_from_frame (f2f).
  virtual Maps reference_maps(int level) = 0;
  /// Fills reference levels 1.. from level 0 (KinFu resizeVMap/resizeNMap: 2x2 mean, invalid if any is).
  virtual void reference_pyramid_from_level0() = 0;
  /// f2f: the current frame's maps, moved to the world frame with `camera_to_world`, become the reference
  /// at every level.
  virtual void reference_from_frame(const Rigid& camera_to_world) = 0;
  /// f2m: the current frame's maps, moved to the world frame with `camera_to_world`, are kept at every level
  /// as the previous frame (IcpRequest::previous_frame); the reference maps stay the model's.
  virtual void keep_previous_frame(const Rigid& camera_to_world) = 0;
  /// One ICP iteration's system at `level`: current-frame pixels moved by `estimate` (camera to world),
  /// projected into the reference camera (`world_to_reference`, `camera` at that level), gated, reduced.
  virtual IcpSystem build_system(int level, const Rigid& estimate, const Rigid& world_to_reference,
                                 const CameraIntrinsics& camera, const IcpGates& gates) = 0;
  /// A whole ICP attempt: per iteration build_system at the level's intrinsics, then icp_step
  /// (icp_step_math.hpp) with params.icp.max_condition, coarse to fine, until the iterations are done or
  /// the state stops. The CUDA backend runs it on the device and synchronises once.
  virtual IcpState run_icp(const IcpRequest& request) = 0;
  /// Host copies, for tests.
  virtual std::vector<float> download_reference_grey(int level) = 0;
  virtual HostMaps download_frame_maps(int level) = 0;
  virtual HostMaps download_reference_maps(int level) = 0;
  virtual std::vector<float> download_filtered_depth(int level) = 0;
};

/// The TSDF volume: integration, ray casting, surface extraction.
class VolumeBackend {
 public:
  virtual ~VolumeBackend() = default;
  /// Empties the volume (tsdf 0, weight 0).
  virtual void reset() = 0;
  /// Projective TSDF update with the validity-masked depth (backend memory, 0 = invalid) seen from
  /// `camera_to_world` with level-0 intrinsics. `rgb` (host memory, may be null): the depth's size, dense,
  /// 3 bytes per pixel, registered to the depth; a volume with colour takes it where the voxel is near the
  /// surface (takes_color), one without ignores it.
  virtual void integrate(ImageView<const float> depth_m, const std::uint8_t* rgb, const CameraIntrinsics& camera,
                         const Rigid& camera_to_world) = 0;
  /// Ray casts the zero crossing seen from `camera_to_world` into `out` (world-frame vertices and normals,
  /// backend memory, level-0 size); pixels without a surface are invalid.
  virtual void raycast(const CameraIntrinsics& camera, const Rigid& camera_to_world, Maps out) = 0;
  /// Marching cubes / the zero crossings along the axes (volume_common.hpp), over slabs of `slab_slices` z
  /// slices (0: as many as keep the scratch near kSlabVoxels voxels); the result does not depend on it.
  virtual Mesh extract_mesh(int slab_slices) = 0;
  virtual SurfaceCloud extract_cloud(int slab_slices) = 0;
  /// Host copies of the voxels (x fastest, then y, then z), for tests: tsdf scaled to int16, weights.
  virtual void download(std::vector<std::int16_t>& tsdf, std::vector<std::int16_t>& weight) = 0;
  /// Host copies of the voxels' colours, r g b weight per voxel (empty without colour), for tests.
  virtual void download_colors(std::vector<std::uint8_t>& rgbw) = 0;
};

std::unique_ptr<TrackingBackend> make_cpu_tracking(const FusionParams& params, int width, int height);
std::unique_ptr<VolumeBackend> make_cpu_volume(const VolumeParams& params);
/// Defined only when CUDA is built; the engine has made `device` current. @throws CudaError, OutOfMemory.
std::unique_ptr<TrackingBackend> make_cuda_tracking(const Device& device, const FusionParams& params, int width,
                                                    int height);
std::unique_ptr<VolumeBackend> make_cuda_volume(const Device& device, const VolumeParams& params);

}  // namespace s3d::fusion::detail
