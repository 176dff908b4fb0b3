#pragma once
// Architecture switches for kernels. `S3D_CUDA_ARCH` is __CUDA_ARCH__ in device code and 0 on the host;
// building with S3D_PORTABLE_KERNELS (CMake option of the same name) forces it to 0 in device code too, so
// every sm_80+/sm_90 fast path falls back to its portable form. The GPU checks build the tests a second time
// that way and run them on a new GPU: the fallbacks that older GPUs (sm_75) execute are tested, not only
// compiled.
#if defined(__CUDA_ARCH__) && !defined(S3D_PORTABLE_KERNELS)
#define S3D_CUDA_ARCH __CUDA_ARCH__
#else
#define S3D_CUDA_ARCH 0
#endif

#if defined(__CUDACC__)
namespace s3d::detail {

/// Minimum / maximum of `v` over a whole (fully active) warp: one redux instruction from sm_80, a
/// butterfly of shuffles before. Both give the same value.
__device__ __forceinline__ unsigned warp_reduce_min(unsigned v) {
#if S3D_CUDA_ARCH >= 800
  return __reduce_min_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}

__device__ __forceinline__ unsigned warp_reduce_max(unsigned v) {
#if S3D_CUDA_ARCH >= 800
  return __reduce_max_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}

__device__ __forceinline__ int warp_reduce_min(int v) {
#if S3D_CUDA_ARCH >= 800
  return __reduce_min_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}

}  // namespace s3d::detail
#endif
