#pragma once
// Internal: launchers of the CUDA tracking stages (device pointers, dense, pitch = width), each running the
// same per-pixel function as its CPU twin in tracking_cpu.hpp. All are asynchronous on `stream` and check
// their launch; none launches for an empty image.
#include <cuda_runtime.h>

#include <array>

#include "icp_step_math.hpp"
#include "s3d/fusion/params.hpp"
#include "tracking_math.hpp"

namespace s3d::fusion::detail {

/// Uploads the (2r+1)^2 spatial weights into constant memory, on `stream`. `side * side` <= 33 * 33.
void upload_bilateral_space_cuda(const float* host_table, int count, cudaStream_t stream);
/// mask_depth into `dst`; adds the valid count to `*d_valid` (integer atomics: exact).
void mask_depth_cuda(const float* src, int w, int h, float min_depth, float max_depth, float* dst,
                     unsigned long long* d_valid, cudaStream_t stream);
void bilateral_cuda(const float* src, int w, int h, int radius, float inv_two_sigma_d2, float* dst,
                    cudaStream_t stream);
void pyrdown_cuda(const float* src, int sw, int sh, float gate, float* dst, cudaStream_t stream);
void vertex_normal_maps_cuda(const float* depth, int w, int h, const Pinhole& camera, Vec3f* vertices, Vec3f* normals,
                             cudaStream_t stream);
void halve_maps_cuda(const Vec3f* sv, const Vec3f* sn, int sw, int sh, Vec3f* dv, Vec3f* dn, cudaStream_t stream);
void transform_maps_cuda(const Vec3f* sv, const Vec3f* sn, int pixels, const Rigid& t, Vec3f* dv, Vec3f* dn,
                         cudaStream_t stream);

/// halve_grey_pixel / grey_gradient_pixel over the image (tracking_cpu.hpp's twins).
void halve_grey_cuda(const float* src, int sw, int sh, float* dst, cudaStream_t stream);
void grey_gradient_cuda(const float* grey, int w, int h, float* gx, float* gy, cudaStream_t stream);
/// The ICP reduction in one launch: every block reduces one tile; the last block to finish (atomic ticket
/// on `d_counter`, which must be 0 and is left 0) sums the tiles in the fixed double tree and writes
/// kIcpTerms doubles to `host_out`, pinned host
/// memory that the kernel writes directly (unified addressing); read it after synchronising `stream`. `d_tile_sums`
/// holds kIcpTerms * icp_tiles(pixels) floats.
void icp_reduce_cuda(const IcpInputs& in, float* d_tile_sums, unsigned int* d_counter, double* host_out,
                     cudaStream_t stream);

/// What a whole ICP attempt on the device reads: per level its inputs (the estimate is the state's), its
/// iterations and tiles; levels run from levels - 1 down to 0.
constexpr int kMaxIcpLevels = 5;
static_assert(std::tuple_size_v<decltype(IcpParams::iterations)> == kMaxIcpLevels, "a level per iteration count");
struct IcpAttemptLevel {
  IcpInputs in;
  int iterations;
  int tiles;
};
struct IcpAttempt {
  IcpAttemptLevel level[kMaxIcpLevels];
  int levels;
  int max_tiles;  ///< over the levels: each of the two tile-sum buffers holds kIcpTerms * max_tiles floats
  double max_condition;
};

/// Blocks of icp_attempt_cuda that are resident at once on `device` (0: no cooperative launch there).
int icp_attempt_blocks(int device);
/// A whole attempt in one cooperative launch of `blocks` blocks (<= icp_attempt_blocks): the same states as
/// icp_iteration_cuda called per iteration. `d_tile_sums` holds 2 * kIcpTerms * max_tiles floats; `d_state`
/// holds the start state and receives the end state.
void icp_attempt_cuda(const IcpAttempt& attempt, int blocks, float* d_tile_sums, IcpState* d_state,
                      cudaStream_t stream);

/// One iteration of an ICP attempt whose state is `d_state` (device memory): nothing once the state stopped or
/// gave up `level`; else the system at the state's estimate, reduced as icp_reduce_cuda does, and icp_step
/// applied by the last block. Consecutive calls chain on `stream` with no host step between them.
void icp_iteration_cuda(const IcpInputs& in, float* d_tile_sums, unsigned int* d_counter, IcpState* d_state, int level,
                        double max_condition, cudaStream_t stream);

}  // namespace s3d::fusion::detail
