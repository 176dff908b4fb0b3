#pragma once
// Non-maximum suppression (NMS) of detection boxes: hard NMS, soft-NMS and rotated-box NMS, exact and
// batched over groups, on the CPU and on CUDA with identical keep lists.
//
// Semantics (default parameters = torchvision `ops.nms` / `ops.batched_nms`):
//  - Boxes are x1, y1, x2, y2 (pixels, any finite floats). Area = (x2 - x1) * (y2 - y1) with no +1,
//    computed in float. Intersection width/height = max(0, min(x2a, x2b) - max(x1a, x1b)), IoU =
//    inter / (area_a + area_b - inter), one float division. This is torchvision's CPU and CUDA kernel
//    formula; zero-area and inverted boxes therefore have inter = 0 with everything: they never
//    suppress and are never suppressed (0 / 0 = NaN compares false).
//  - Scores are sorted descending and *stably*: equal scores keep the lower input index first.
//  - A box is suppressed iff its IoU with an already kept, higher-ranked box of the same group is
//    strictly greater than `iou_threshold` (`>=` with `suppress_at_equal`).
//  - Groups (e.g. image x class) never interact. All groups are processed together (one batched GPU
//    pipeline, not a loop). The output is ordered by score globally (descending, ties -> lower input
//    index), like torchvision's batched_nms.
//  - Pipeline order: `min_score` pre-filter -> `pre_top_k` per group -> NMS -> `max_dets` per image.
//
// Rotated boxes (`rotated = true`): each box is cx, cy, w, h, angle with `angle` in **radians**. The
// corners are (cx, cy) + R(angle) * (+-w/2, +-h/2) with R = [[cos, -sin], [sin, cos]]: a positive angle
// turns the box from the +x axis towards the +y axis, i.e. counter-clockwise in a y-up frame (BEV, as
// OpenPCDet / mmcv box_iou_rotated) and clockwise as seen on an image with y pointing down. The IoU is
// exact for the two rectangles (convex polygon clipping, area by the shoelace formula); w <= 0 or h <= 0
// gives inter = 0 (never suppresses, never suppressed). `pixel_offset` must be 0 for rotated boxes.
//
// Both backends evaluate the same `S3D_HOST_DEVICE` formulas (nms_math.hpp) without FMA contraction, and
// sine/cosine/exp are evaluated by the library's own deterministic routines, so CPU and CUDA keep lists
// (and soft-NMS scores) are bit-identical.
//
// This header needs no CUDA.
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"

namespace s3d::detection {

/// How overlapping lower-ranked boxes are treated.
enum class NmsMethod {
  kHard,          ///< classic NMS: suppressed boxes are removed
  kSoftLinear,    ///< soft-NMS (Bodla et al. 2017), linear decay: s *= 1 - IoU when IoU passes the threshold
  kSoftGaussian,  ///< soft-NMS, Gaussian decay: s *= exp(-IoU^2 / sigma) for every later box (mmcv `soft_nms`)
};

/// Parameters of one NMS call. Defaults reproduce torchvision `ops.nms` / `batched_nms`.
struct NmsParams {
  /// IoU threshold in [0, 1] (in (0, 1] with `suppress_at_equal`). Hard NMS: suppress iff IoU > threshold.
  /// Soft-linear: decay iff IoU > threshold. Unused by soft-gaussian (as in mmcv).
  float iou_threshold = 0.5f;
  /// Compare with `>=` instead of `>` (TensorRT EfficientNMS, mmcv soft_nms / nms_rotated: `--iou-ge`).
  bool suppress_at_equal = false;
  /// 0 (default, torchvision) or 1: legacy "+1" pixel convention, area = (x2-x1+1)(y2-y1+1) and
  /// intersection sides max(0, min-max+1) (Detectron / old mmcv `offset=1`). Axis-aligned boxes only.
  int pixel_offset = 0;
  NmsMethod method = NmsMethod::kHard;
  /// Gaussian soft-NMS parameter (> 0): weight = exp(-IoU^2 / sigma), as mmcv (default 0.5).
  float sigma = 0.5f;
  /// Soft-NMS only: a box whose decayed score falls strictly below this is dropped (mmcv `min_score`,
  /// default 1e-3). Must be finite and >= 0.
  float soft_min_score = 1e-3f;
  /// Pre-filter: only boxes with score >= min_score take part (default -inf: all; NaN scores never pass).
  float min_score = -std::numeric_limits<float>::infinity();
  /// Per group, keep only the `pre_top_k` highest-scored boxes before NMS (0 = all).
  std::int64_t pre_top_k = 0;
  /// Per image (`NmsInput::image_ids`, or all boxes when absent), keep only the `max_dets` highest-scored
  /// boxes after NMS, by their (possibly soft-decayed) final score (0 = unlimited).
  std::int64_t max_dets = 0;
  /// Boxes are cx, cy, w, h, angle (radians; see the header comment) instead of x1, y1, x2, y2.
  bool rotated = false;

  /// Checks every field. @throws InvalidArgument naming the first bad field and its value.
  void validate() const;
  /// Floats per box: 4, or 5 when `rotated`.
  int box_dim() const { return rotated ? 5 : 4; }
};

/// Borrowed input arrays of one NMS call (nothing is copied until the call). Memory space: host memory for
/// `nms()` and `NmsEngine::run()`, device memory (on the engine's device) for `NmsEngine::run_device_async()`.
struct NmsInput {
  /// count x box_dim() floats, row-major: x1, y1, x2, y2 (or cx, cy, w, h, angle when rotated).
  const float* boxes = nullptr;
  /// count scores. NaN scores never pass the `min_score` pre-filter (they are dropped).
  const float* scores = nullptr;
  /// Optional (nullptr = one group): the batching key per box, any int64 values (e.g. image*1000+class).
  const std::int64_t* group_ids = nullptr;
  /// Optional (nullptr = one image): the image per box, used only by `max_dets`.
  const std::int64_t* image_ids = nullptr;
  /// Number of boxes, 0 <= count < 2^31.
  std::int64_t count = 0;
};

/// What survives, in output order: descending final score, ties -> lower input index first.
struct NmsResult {
  /// 0-based input positions of the kept boxes.
  std::vector<std::int64_t> keep;
  /// Final score of each kept box (the input score for hard NMS, the decayed score for soft-NMS).
  std::vector<float> scores;
};

/// Runs NMS on `device` (cpu, cuda:N; auto is resolved here). Inputs are host memory; synchronous.
/// A CUDA call uses a temporary engine (allocations come from the stream-ordered pool, so repeated calls
/// are cheap); keep an `NmsEngine` for batches.
/// @throws InvalidArgument for bad params or count, DataError for a non-finite box coordinate (naming the
///         box), DeviceUnavailable / CudaError / OutOfMemory from the CUDA backend.
NmsResult nms(const Device& device, const NmsInput& input, const NmsParams& params);

/// IoU of two boxes exactly as the NMS kernels evaluate it (`a` is the higher-ranked box; for rotated boxes
/// the polygon clipping is evaluated in that order). For tests and tools.
float nms_iou(const float* a, const float* b, const NmsParams& params);

/// An NMS engine bound to one device; it keeps its (device or host) scratch buffers across calls so that a
/// batch of files pays for allocation once. Not thread-safe: one engine per thread. Device buffers are
/// stream-ordered: they are released on the stream of the call that (re)allocated them. Destroying a CUDA engine
/// first waits for the work of every call made on it (on events of its own; errors are logged, never thrown);
/// since its buffers are then released on the streams of the calls that allocated them, destroy the engine
/// before destroying a stream you passed to it.
class NmsEngine {
 public:
  /// @throws DeviceUnavailable when `device` is CUDA and none is visible (auto is resolved here).
  explicit NmsEngine(const Device& device);
  ~NmsEngine();
  NmsEngine(NmsEngine&&) noexcept;
  NmsEngine& operator=(NmsEngine&&) noexcept;
  NmsEngine(const NmsEngine&) = delete;
  NmsEngine& operator=(const NmsEngine&) = delete;

  /// The resolved device (cpu or cuda:N).
  const Device& device() const;

  /// Host inputs, host result; uses `stream` on CUDA (nullptr = default stream) and synchronizes it.
  /// @throws as `nms()`.
  NmsResult run(const NmsInput& host_input, const NmsParams& params, StreamHandle stream = nullptr);

  /// CUDA engines only. `device_input` points to device memory; the result stays on the device:
  /// `device_keep()` / `device_scores()` hold `device_keep_count()` entries (a device int64) once `stream`
  /// reaches the end of the enqueued work. Inputs are not validated (no finite check). The call is
  /// stream-ordered; it synchronizes `stream` (a short host wait) only where a size must be known on the host:
  /// hard NMS with more than 16,384 boxes (to size the sparse IoU mask), after an active `min_score` or
  /// `pre_top_k` filter, for `max_dets` with image ids, and once per soft-NMS call (the group count). Small hard
  /// axis-aligned calls (up to 1024 boxes, no `pre_top_k`) take a fused three-kernel path that applies
  /// `min_score` on the device: they synchronize only for `max_dets` with image ids.
  /// A call that needs none of these syncs (on a stream other than the legacy default one) is captured into a
  /// CUDA graph the second time it repeats identically (same input pointers, count, params, stream) and the
  /// graph is replayed from then on (one launch instead of ~30; inputs are re-read, so new contents at the same
  /// addresses are fine; results are identical). Any other call, or `run()`, drops the graph.
  ///
  /// Algorithm (CUDA): rank by stable radix sort (score, then group); within each group sort spatially
  /// (Morton order of box centres) so that a 64-box tile covers a small area; evaluate only 64x64 tile pairs
  /// whose bounds overlap (two-level culling), one 64-bit word per (box, tile) holding the bits of the
  /// higher-ranked boxes of its group that suppress it (memory = pairs x 512 bytes, not N^2/8); then resolve
  /// greedy NMS exactly with parallel rounds in one cooperative kernel (a box is removed once a suppressor is
  /// kept, kept once all its suppressors are removed). Fused small path (hard, axis-aligned, <= 1024 boxes): one
  /// block sorts the scores (stable block radix sort), a dense lower triangle of 64x64 tiles stores only the
  /// non-zero suppressor words per box, and one block resolves the same rounds with block barriers. Soft-NMS: one block
  /// per group; groups of up to ~11k boxes keep their state in shared memory and registers (one reduction and one
  /// barrier per selection).
  /// @throws InvalidArgument on a CPU engine or for bad params; CudaError / OutOfMemory.
  void run_device_async(const NmsInput& device_input, const NmsParams& params, StreamHandle stream);
  /// Device pointers into the engine's buffers, valid until the next call on this engine.
  const std::int64_t* device_keep() const;
  const float* device_scores() const;
  const std::int64_t* device_keep_count() const;
  /// Copies the last device result to the host (synchronizes `stream`).
  NmsResult download(StreamHandle stream = nullptr) const;

  /// Statistics of the last CUDA call (for benchmarks and docs): candidate 64x64 tile pairs of the sparse
  /// IoU mask (its memory is pairs x 64 words of 8 bytes) and scan rounds.
  struct Stats {
    std::int64_t boxes = 0;       ///< boxes that entered NMS (after the pre-filters)
    std::int64_t tile_pairs = 0;  ///< 64x64 tiles evaluated (dense would be tiles^2)
    std::int64_t rounds = 0;      ///< parallel scan rounds (read back lazily; -1 when unknown)
    bool graph = false;           ///< the call ran as a CUDA graph (captured or replayed; run_device_async)
  };
  Stats last_stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace s3d::detection
