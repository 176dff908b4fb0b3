#pragma once
// S3D_HOST_DEVICE marks math written once and compiled by both g++ (CPU backend) and nvcc (CUDA
// backend). Both sides are built without FMA contraction (-ffp-contract=off / --fmad=false) so that
// discrete results derived from this math (disparities, keep lists) agree bit-for-bit.
#if defined(__CUDACC__)
#define S3D_HOST_DEVICE __host__ __device__
#define S3D_DEVICE __device__
#define S3D_FORCEINLINE __forceinline__
#else
#define S3D_HOST_DEVICE
#define S3D_DEVICE
#define S3D_FORCEINLINE inline
#endif
