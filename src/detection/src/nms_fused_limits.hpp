#pragma once
// Internal: how many boxes the fused small hard-NMS path (nms_fused_cuda.cu) can take on a device, from the
// dynamic shared memory of its one-block sort kernels. No CUDA types here, so the limit is testable on the host.
#include <algorithm>

namespace s3d::detection::detail {

/// One instantiation of the fused sort kernel: it sorts up to `max_boxes` scores in one block and needs
/// `smem_bytes` of dynamic shared memory (the CUB block radix sort's storage plus the live-box counter; the
/// kernel has no static shared memory). nms_fused_cuda.cu static_asserts these sizes against the kernels.
struct FusedSortVariant {
  int max_boxes;
  int smem_bytes;
};

inline constexpr FusedSortVariant kFusedSortVariants[] = {{1024, 9296}, {4096, 18544}, {16384, 67600}};

/// The fused path's box limit on a device whose per-block opt-in shared memory is `optin_bytes`: `requested`
/// (the default or the S3D_NMS_FUSED_MAX_BOXES override), clamped to the largest sort variant that fits, 0 when
/// none does. Larger calls take the general pipeline, whose results are identical.
inline int fused_max_boxes_for(int optin_bytes, int requested) {
  int fits = 0;
  for (const FusedSortVariant& v : kFusedSortVariants)
    if (v.smem_bytes <= optin_bytes) fits = std::max(fits, v.max_boxes);
  return std::clamp(requested, 0, fits);
}

}  // namespace s3d::detection::detail
