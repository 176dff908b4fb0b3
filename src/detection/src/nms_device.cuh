#pragma once
// Device helpers shared by the NMS CUDA stages: key encodings, the box type per mode, launch sizing, and the
// host-side scratch every stage borrows from the engine (CUB temporary storage, a pinned read-back slot).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "nms_math.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/pinned_buffer.hpp"

namespace s3d::detection::detail {

/// Boxes per tile of the suppression mask: one 64-bit word holds a box's suppressors within one tile.
constexpr int kTile = 64;
/// Score key of a box that is filtered out (NaN, below min_score): sorts after every live key.
constexpr unsigned kDeadKey = 0xFFFFFFFFu;

/// Float -> unsigned with the same order (negative floats inverted), so atomicMin/Max can reduce floats.
__host__ __device__ inline unsigned ordered_bits(float f) {
  unsigned b;
  memcpy(&b, &f, 4);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__host__ __device__ inline float from_ordered(unsigned o) {
  const unsigned b = (o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/// The prepared box of each mode: axis-aligned or rotated.
template <bool kRot>
struct BoxOf;
template <>
struct BoxOf<false> {
  using type = AxisBox;
};
template <>
struct BoxOf<true> {
  using type = RotBox;
};
template <bool kRot>
using BoxType = typename BoxOf<kRot>::type;

/// Whether two bounds (x1, y1, x2, y2) can intersect; `margin` widens them for the +1 pixel convention.
__device__ inline bool bounds_may_intersect(float4 a, float4 b, float margin) {
  return a.z + margin >= b.x && b.z + margin >= a.x && a.w + margin >= b.y && b.w + margin >= a.y;
}

__device__ __forceinline__ float4 corners(const float4& b) { return b; }
__device__ __forceinline__ float4 corners(const AxisBox& b) { return make_float4(b.x1, b.y1, b.x2, b.y2); }

/// The columns k < kend of a kTile-box tile (float4 bounds or AxisBoxes in shared memory) whose intersection
/// with `mine` has positive area, as bits: the IoU's pre-test, branch-free over the whole tile, so that a mask
/// kernel then computes the IoU of these candidates only (a warp no longer pays for an IoU wherever one lane
/// overlaps). The same decisions as axis_iou: inter = 0 gives IoU 0, -0 or NaN, which never passes (thr >= 0,
/// and > 0 with `ge`). Without the +1 offset, inter > 0 needs min(x2) > max(x1) and min(y2) > max(y1) (fminf
/// and fmaxf differ from min_f and max_f only in the sign of a zero, which no comparison sees); with it, the
/// product of the clamped sides must not be 0. Zero-area and inverted boxes (without the offset) are never
/// candidates: min(x2) <= their x2 <= their x1 <= max(x1). Columns from kend on may hold anything.
template <int kTileBoxes, typename Box>
__device__ __forceinline__ unsigned long long overlap_candidates(const Box* cols, const AxisBox& mine, int offset,
                                                                 int kend) {
  static_assert(kTileBoxes == 64, "two 32-bit halves");
  const float off = static_cast<float>(offset);
  unsigned lo = 0, hi = 0;
#pragma unroll
  for (int k = 0; k < kTileBoxes; ++k) {
    const float4 o = corners(cols[k]);
    const float xx1 = fmaxf(o.x, mine.x1), yy1 = fmaxf(o.y, mine.y1);
    const float xx2 = fminf(o.z, mine.x2), yy2 = fminf(o.w, mine.y2);
    const bool hit =
        offset == 0 ? (xx2 > xx1 && yy2 > yy1) : max_f(0.f, xx2 - xx1 + off) * max_f(0.f, yy2 - yy1 + off) != 0.f;
    if (hit) {
      if (k < 32)
        lo |= 1u << k;
      else
        hi |= 1u << (k - 32);
    }
  }
  unsigned long long cand = (static_cast<unsigned long long>(hi) << 32) | lo;
  if (kend < kTileBoxes) cand &= (1ull << kend) - 1ull;
  return cand;
}

/// Takes the lowest set bit of `bits` off and returns its index.
__device__ __forceinline__ int pop_lowest(unsigned long long& bits) {
  const int k = __ffsll(static_cast<long long>(bits)) - 1;
  bits &= bits - 1ull;
  return k;
}

struct MaxOp {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};

/// The tile (r, c), c <= r, of the lower triangle that block `b` covers, the blocks numbered row by row.
__device__ inline void lower_triangle_tile(long long b, int& r, int& c) {
  r = static_cast<int>((sqrt(8.0 * static_cast<double>(b) + 1.0) - 1.0) * 0.5);
  while (static_cast<long long>(r) * (r + 1) / 2 > b) --r;
  while (static_cast<long long>(r + 1) * (r + 2) / 2 <= b) ++r;
  c = static_cast<int>(b - static_cast<long long>(r) * (r + 1) / 2);
}

/// Ends a round of a cooperative scan: adds the undecided boxes counted by each warp to the round's counter,
/// clears the next round's, and waits for the whole grid. True when no box is left undecided (`rounds_out` then
/// holds the number of rounds). Counters rotate over three slots so a slot is never cleared while still read.
__device__ __forceinline__ bool round_settles_all(cooperative_groups::grid_group& grid, unsigned* counters, int round,
                                                  unsigned undecided, int* rounds_out) {
  for (int o = 16; o > 0; o >>= 1) undecided += __shfl_down_sync(0xFFFFFFFFu, undecided, o);
  if ((threadIdx.x & 31) == 0 && undecided) atomicAdd(&counters[round % 3], undecided);
  if (grid.thread_rank() == 0) counters[(round + 1) % 3] = 0;
  grid.sync();
  if (static_cast<volatile unsigned*>(counters)[round % 3] != 0) return false;
  if (grid.thread_rank() == 0) *rounds_out = round + 1;
  return true;
}

/// Blocks of `block` threads for `n` items; at least one, so an empty launch is still a valid launch.
inline unsigned grid_for(std::size_t n, unsigned block = 256) {
  return std::max(1u, ::s3d::detail::grid_size(n, block));
}

inline int bit_length(unsigned long long v) {
  int b = 0;
  while (v) {
    ++b;
    v >>= 1;
  }
  return b;
}

/// Temporary storage of the CUB device algorithms, grown to the largest request and kept.
class CubScratch {
 public:
  /// `algorithm(void* storage, std::size_t& bytes)` is one CUB call: asked for its size first, then run.
  template <typename Algorithm>
  void run(Algorithm&& algorithm, StreamHandle stream) {
    std::size_t bytes = 0;
    S3D_CUDA_CHECK(algorithm(static_cast<void*>(nullptr), bytes));
    storage_.resize(std::max<std::size_t>(bytes, 1), stream);
    S3D_CUDA_CHECK(algorithm(static_cast<void*>(storage_.data()), bytes));
  }

 private:
  DeviceBuffer<unsigned char> storage_;
};

/// A pinned slot for the device scalars the host must know to size the next stage. Each read synchronizes
/// the stream.
class HostReadback {
 public:
  HostReadback() : slot_(1) {}
  long long read(const int* d_value, StreamHandle stream) {
    S3D_CUDA_CHECK(cudaMemcpyAsync(slot_.data(), d_value, sizeof(int), cudaMemcpyDeviceToHost, stream));
    S3D_CUDA_CHECK(cudaStreamSynchronize(stream));
    int v = 0;
    std::memcpy(&v, slot_.data(), sizeof(int));
    return v;
  }
  long long read(const long long* d_value, StreamHandle stream) {
    S3D_CUDA_CHECK(cudaMemcpyAsync(slot_.data(), d_value, sizeof(long long), cudaMemcpyDeviceToHost, stream));
    S3D_CUDA_CHECK(cudaStreamSynchronize(stream));
    return slot_[0];
  }

 private:
  PinnedBuffer<long long> slot_;
};

}  // namespace s3d::detection::detail
