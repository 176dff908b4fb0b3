// Tracking, CUDA: depth mask, bilateral filter, pyrDown, vertex/normal maps and the reference-map helpers.
// One thread per output pixel around the per-pixel functions shared with the CPU (tracking_math.hpp).
#include "s3d/core/cuda_check.cuh"
#include "tracking_cuda.cuh"

namespace s3d::fusion::detail {
namespace {

constexpr int kMaxBilateralSide = 33;  // radius <= 16 (FusionParams::validate)
__constant__ float c_space[kMaxBilateralSide * kMaxBilateralSide];

const dim3 kBlock2d(32, 8);
dim3 grid2d(int w, int h) { return dim3((w + 31) / 32, (h + 7) / 8); }

__global__ void mask_kernel(const float* __restrict__ src, int w, int h, float min_depth, float max_depth,
                            float* __restrict__ dst, unsigned long long* __restrict__ valid) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  bool ok = false;
  if (x < w && y < h) {
    const int i = y * w + x;
    const float d = mask_depth(src[i], min_depth, max_depth);
    dst[i] = d;
    ok = d != 0.0f;
  }
  const unsigned ballot = __ballot_sync(0xffffffffu, ok);
  if ((threadIdx.x % 32) == 0 && ballot) atomicAdd(valid, static_cast<unsigned long long>(__popc(ballot)));
}

__global__ void bilateral_kernel(const float* __restrict__ src, int w, int h, int radius, float inv,
                                 float* __restrict__ dst) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) dst[y * w + x] = bilateral_pixel(src, w, h, x, y, radius, c_space, inv);
}

__global__ void pyrdown_kernel(const float* __restrict__ src, int sw, int sh, float gate, float* __restrict__ dst,
                               int dw, int dh) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < dw && y < dh) dst[y * dw + x] = pyrdown_pixel(src, sw, sh, x, y, gate);
}

__global__ void maps_kernel(const float* __restrict__ depth, int w, int h, Pinhole camera, Vec3f* __restrict__ v,
                            Vec3f* __restrict__ n) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int i = y * w + x;
  v[i] = back_project(depth[i], x, y, camera);
  n[i] = normal_at(depth, w, h, x, y, camera);
}

__global__ void halve_maps_kernel(const Vec3f* __restrict__ sv, const Vec3f* __restrict__ sn, int sw,
                                  Vec3f* __restrict__ dv, Vec3f* __restrict__ dn, int dw, int dh) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < dw && y < dh) halve_maps_pixel(sv, sn, sw, dv, dn, dw, x, y);
}

__global__ void transform_maps_kernel(const Vec3f* __restrict__ sv, const Vec3f* __restrict__ sn, int pixels, Rigid t,
                                      Vec3f* __restrict__ dv, Vec3f* __restrict__ dn) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  const bool ok = is_valid(sv[i]) && is_valid(sn[i]);
  dv[i] = ok ? t.apply(sv[i]) : invalid_vec3();
  dn[i] = ok ? t.rotate(sn[i]) : invalid_vec3();
}

__global__ void halve_grey_kernel(const float* __restrict__ src, int sw, int sh, float* __restrict__ dst, int dw,
                                  int dh) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < dw && y < dh) dst[y * dw + x] = halve_grey_pixel(src, sw, sh, x, y);
}

__global__ void grey_gradient_kernel(const float* __restrict__ grey, int w, int h, float* __restrict__ gx,
                                     float* __restrict__ gy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) grey_gradient_pixel(grey, w, h, x, y, gx, gy);
}

}  // namespace

void halve_grey_cuda(const float* src, int sw, int sh, float* dst, cudaStream_t stream) {
  const int dw = level_size(sw, 1), dh = level_size(sh, 1);
  if (dw <= 0 || dh <= 0) return;
  halve_grey_kernel<<<grid2d(dw, dh), kBlock2d, 0, stream>>>(src, sw, sh, dst, dw, dh);
  S3D_CUDA_CHECK_LAUNCH();
}

void grey_gradient_cuda(const float* grey, int w, int h, float* gx, float* gy, cudaStream_t stream) {
  if (w <= 0 || h <= 0) return;
  grey_gradient_kernel<<<grid2d(w, h), kBlock2d, 0, stream>>>(grey, w, h, gx, gy);
  S3D_CUDA_CHECK_LAUNCH();
}

void upload_bilateral_space_cuda(const float* host_table, int count, cudaStream_t stream) {
  S3D_CUDA_CHECK(
      cudaMemcpyToSymbolAsync(c_space, host_table, sizeof(float) * count, 0, cudaMemcpyHostToDevice, stream));
}

void mask_depth_cuda(const float* src, int w, int h, float min_depth, float max_depth, float* dst,
                     unsigned long long* d_valid, cudaStream_t stream) {
  if (w <= 0 || h <= 0) return;
  mask_kernel<<<grid2d(w, h), kBlock2d, 0, stream>>>(src, w, h, min_depth, max_depth, dst, d_valid);
  S3D_CUDA_CHECK_LAUNCH();
}

void bilateral_cuda(const float* src, int w, int h, int radius, float inv_two_sigma_d2, float* dst,
                    cudaStream_t stream) {
  if (w <= 0 || h <= 0) return;
  bilateral_kernel<<<grid2d(w, h), kBlock2d, 0, stream>>>(src, w, h, radius, inv_two_sigma_d2, dst);
  S3D_CUDA_CHECK_LAUNCH();
}

void pyrdown_cuda(const float* src, int sw, int sh, float gate, float* dst, cudaStream_t stream) {
  const int dw = level_size(sw, 1), dh = level_size(sh, 1);
  if (dw <= 0 || dh <= 0) return;
  pyrdown_kernel<<<grid2d(dw, dh), kBlock2d, 0, stream>>>(src, sw, sh, gate, dst, dw, dh);
  S3D_CUDA_CHECK_LAUNCH();
}

void vertex_normal_maps_cuda(const float* depth, int w, int h, const Pinhole& camera, Vec3f* vertices, Vec3f* normals,
                             cudaStream_t stream) {
  if (w <= 0 || h <= 0) return;
  maps_kernel<<<grid2d(w, h), kBlock2d, 0, stream>>>(depth, w, h, camera, vertices, normals);
  S3D_CUDA_CHECK_LAUNCH();
}

void halve_maps_cuda(const Vec3f* sv, const Vec3f* sn, int sw, int sh, Vec3f* dv, Vec3f* dn, cudaStream_t stream) {
  const int dw = level_size(sw, 1), dh = level_size(sh, 1);
  if (dw <= 0 || dh <= 0) return;
  halve_maps_kernel<<<grid2d(dw, dh), kBlock2d, 0, stream>>>(sv, sn, sw, dv, dn, dw, dh);
  S3D_CUDA_CHECK_LAUNCH();
}

void transform_maps_cuda(const Vec3f* sv, const Vec3f* sn, int pixels, const Rigid& t, Vec3f* dv, Vec3f* dn,
                         cudaStream_t stream) {
  if (pixels <= 0) return;
  transform_maps_kernel<<<s3d::detail::grid_size(pixels, 256), 256, 0, stream>>>(sv, sn, pixels, t, dv, dn);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::fusion::detail
