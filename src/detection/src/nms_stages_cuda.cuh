#pragma once
// The stages of the CUDA NMS backend, each with the buffers it owns. The engine (nms_engine_cuda.cu) holds one
// of each buffer struct for its lifetime; a stage resizes its buffers per call (DeviceBuffer grows only), so a
// batch allocates once per largest size. Every function queues work on `stream`; a comment says where one
// synchronizes (to learn a size on the host).
//
// Orders used below: input index i (the caller's box), rank s (global stable score order, dead boxes last),
// priority position p (group-major, score order within a group), tile position q (the layout of the 64-box
// tiles of the hard-NMS mask: p itself for small problems, Morton order within each group for large ones).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "nms_device.cuh"
#include "nms_fused_limits.hpp"
#include "s3d/detection/nms.hpp"

namespace s3d::detection::detail {

/// Up to this many boxes the hard-NMS mask is built in priority order (dense lower triangle of tiles).
constexpr int kPriorityOrderMaxBoxes = 2048;
/// Up to this many tiles the mask is sized by its bound (tiles^2 pairs, <= 32 MiB) instead of by a count read
/// back from the device: no host synchronization in the call.
constexpr int kBoundedMaskMaxTiles = 256;
/// Up to this many boxes the greedy scan gives each box a warp (a round is then a few dependent loads).
constexpr int kWarpScanMaxBoxes = 16384;

/// The result of a call on the device, in output order.
struct DeviceResult {
  DeviceBuffer<std::int64_t> keep;   ///< input index of each kept box
  DeviceBuffer<float> scores;        ///< its final score
  DeviceBuffer<std::int64_t> count;  ///< one value: kept boxes
};

// ---- ranking (nms_rank_cuda.cu) ----

/// Start of each element's segment, for runs of equal keys (groups of a sorted list).
struct SegmentStarts {
  DeviceBuffer<int> head;           ///< 1 where a segment starts
  DeviceBuffer<int> head_position;  ///< the position at heads, 0 elsewhere (the max-scan's input)
  DeviceBuffer<int> start;          ///< first position of the element's segment
};

struct RankBuffers {
  DeviceBuffer<unsigned> score_key_of_input;  ///< descending score key by input index, kDeadKey if filtered
  DeviceBuffer<int> input_sequence;           ///< 0..n-1: the score sort's values
  DeviceBuffer<unsigned> score_key_of_rank;
  DeviceBuffer<int> input_of_rank;
  DeviceBuffer<int> live_count;                        ///< boxes passing min_score
  DeviceBuffer<unsigned long long> group_key_of_rank;  ///< group id as an unsigned key (dead boxes: ~0)
  DeviceBuffer<int> rank_sequence;                     ///< 0..m-1: the group sort's values
  DeviceBuffer<unsigned long long> group_key_of_priority;
  DeviceBuffer<int> rank_of_priority;
  // pre_top_k: the first k of each group, compacted
  SegmentStarts group_segments;
  DeviceBuffer<unsigned char> in_top_k;  ///< by priority position
  DeviceBuffer<int> top_k_rank_of_priority;
  DeviceBuffer<unsigned long long> top_k_group_key;
  DeviceBuffer<int> top_k_counts;  ///< the two compactions' counts (same value)
};

/// The boxes that enter NMS, ranked (views into RankBuffers, valid until the next call).
struct Ranking {
  int boxes = 0;  ///< m: boxes after min_score and pre_top_k
  bool grouped = false;
  const unsigned* score_key_of_rank = nullptr;
  const int* input_of_rank = nullptr;
  const int* rank_of_priority = nullptr;                      ///< null: the priority order is the rank order
  const unsigned long long* group_key_of_priority = nullptr;  ///< null when ungrouped
};

/// Ranks the `in.count` boxes by score, then by group, and applies min_score and pre_top_k. Synchronizes once
/// after an active min_score (the live count) and once after an active pre_top_k (the compacted count).
Ranking rank_boxes(const NmsInput& in, const NmsParams& params, RankBuffers& buffers, CubScratch& cub,
                   HostReadback& readback, StreamHandle stream);

// ---- segments and groups (nms_segments_cuda.cu) ----

/// `keys` sorted (nullptr: one segment). start[p] = first position of p's run of equal keys.
void find_segment_starts(int count, const unsigned long long* keys, SegmentStarts& out, CubScratch& cub,
                         StreamHandle stream);

/// Group index per priority position and [start, end) per group.
struct GroupRanges {
  DeviceBuffer<int> head;  ///< 1 where a group starts
  DeviceBuffer<int> group_of_box;
  DeviceBuffer<int> group_start;
  DeviceBuffer<int> group_end;
};
/// Groups from `keys` sorted by group (nullptr: the same kernels make one group).
void find_groups(int count, const unsigned long long* keys, GroupRanges& out, CubScratch& cub, StreamHandle stream);
/// One group of `count` boxes (group_of_box is not written: readers take nullptr for it).
void single_group(int count, GroupRanges& out, StreamHandle stream);

// ---- box geometry and tile order (nms_geometry_cuda.cu) ----

/// The ranked boxes in priority order, prepared for the pair math.
struct PreparedBoxes {
  DeviceBuffer<AxisBox> axis;
  DeviceBuffer<RotBox> rotated;
  DeviceBuffer<float4> bounds;              ///< x1, y1, x2, y2 (rotated: of the corners)
  DeviceBuffer<unsigned char> can_overlap;  ///< 0: live box that can intersect nothing, or a dead one
  DeviceBuffer<unsigned> extent;            ///< ordered_bits of the union bounds of boxes that can overlap

  template <bool kRot>
  DeviceBuffer<BoxType<kRot>>& boxes() {
    if constexpr (kRot) {
      return rotated;
    } else {
      return axis;
    }
  }
};

/// Fills `out` for the `ranked.boxes` boxes; with `with_extent`, also their union bounds.
template <bool kRot>
void prepare_boxes(const Ranking& ranked, const float* boxes, int pixel_offset, bool with_extent, PreparedBoxes& out,
                   StreamHandle stream);

/// max |coordinate| of the prepared bounds (for the pixel_offset pruning margin). Synchronizes.
float max_abs_coordinate(int count, PreparedBoxes& prepared, StreamHandle stream);

/// The prepared boxes in tile order q.
struct TiledBoxes {
  DeviceBuffer<unsigned long long> morton_key;  ///< (group << 32) | Morton code of the centre, by p
  DeviceBuffer<unsigned long long> sorted_morton_key;
  DeviceBuffer<int> priority_sequence;   ///< 0..m-1: the Morton sort's values
  DeviceBuffer<int> priority_of_sorted;  ///< the sort's output: p of each q
  DeviceBuffer<AxisBox> axis;
  DeviceBuffer<RotBox> rotated;
  DeviceBuffer<float4> bounds;
  DeviceBuffer<unsigned char> can_overlap;
  DeviceBuffer<int> group;
  DeviceBuffer<int> priority;  ///< p of each q (the rank within the call)

  template <bool kRot>
  DeviceBuffer<BoxType<kRot>>& boxes() {
    if constexpr (kRot) {
      return rotated;
    } else {
      return axis;
    }
  }
};

/// Lays the prepared boxes out in tile order: Morton order within each group when `spatial`, else q = p.
template <bool kRot>
void order_tiles(const Ranking& ranked, PreparedBoxes& prepared, const GroupRanges& groups, bool spatial,
                 TiledBoxes& out, CubScratch& cub, StreamHandle stream);

// ---- sparse suppression mask (nms_mask_cuda.cu) ----

struct TileMask {
  DeviceBuffer<float4> tile_bounds;                   ///< union bounds of each tile's boxes that can overlap
  DeviceBuffer<float4> super_tile_bounds;             ///< of 32 consecutive tiles
  DeviceBuffer<int2> column_range;                    ///< per row tile: the first and last column tile of its groups
  DeviceBuffer<long long> pair_count;                 ///< candidate column tiles per row tile (+1 slot for the total)
  DeviceBuffer<long long> pair_offset;                ///< exclusive scan of pair_count: a row tile's first pair
  DeviceBuffer<int> pair_row, pair_col;               ///< tile pairs, row-major
  DeviceBuffer<unsigned long long> suppressor_words;  ///< pairs x 64: bits of the column boxes suppressing a row box
};

struct MaskShape {
  int tiles = 0;
  long long pairs = 0;  ///< exact, or the bound that sized the mask (the device holds the real count)
};

/// Finds the candidate tile pairs and evaluates their IoU words. Synchronizes when the mask has more than
/// kBoundedMaskMaxTiles tiles (to size it).
template <bool kRot>
MaskShape build_mask(int count, TiledBoxes& tiled, const GroupRanges& groups, bool priority_order,
                     const unsigned* extent, const NmsParams& params, int sm_count, TileMask& mask, CubScratch& cub,
                     HostReadback& readback, StreamHandle stream);

// ---- greedy scan and output (nms_scan_cuda.cu) ----

struct ScanBuffers {
  DeviceBuffer<unsigned char> decision;  ///< per tile position: 0 undecided, 1 kept, 2 removed
  DeviceBuffer<unsigned> undecided;      ///< three rotating per-round counters
  DeviceBuffer<int> rounds;
  DeviceBuffer<unsigned char> kept_of_rank;
  DeviceBuffer<int> kept_input;  ///< input indices of the kept boxes, in rank order
  DeviceBuffer<int> kept_count;
  int blocks_per_sm = 0;       ///< occupancy of scan_rounds_kernel (queried on first use)
  int warp_blocks_per_sm = 0;  ///< of scan_rounds_warp_kernel
};

/// Resolves greedy NMS over the mask (one cooperative kernel, all rounds).
void resolve_greedy(int count, const TileMask& mask, const TiledBoxes& tiled, int sm_count, ScanBuffers& scan,
                    StreamHandle stream);

/// Writes the kept boxes of all `input_count` inputs to `result` in global rank order.
void compact_kept(int input_count, int count, const Ranking& ranked, const TiledBoxes& tiled, const float* scores,
                  ScanBuffers& scan, CubScratch& cub, DeviceResult& result, StreamHandle stream);

// ---- hard NMS pipeline (nms_hard_cuda.cu) ----

struct HardBuffers {
  PreparedBoxes prepared;
  GroupRanges groups;
  TiledBoxes tiled;
  TileMask mask;
  ScanBuffers scan;
};

/// Hard NMS of the ranked boxes into `result`. Returns the mask's shape.
template <bool kRot>
MaskShape hard_nms(const NmsInput& in, const NmsParams& params, const Ranking& ranked, int sm_count,
                   HardBuffers& buffers, CubScratch& cub, HostReadback& readback, DeviceResult& result,
                   StreamHandle stream);

// ---- soft-NMS (nms_soft_cuda.cu) ----

struct SoftBuffers {
  PreparedBoxes prepared;
  GroupRanges groups;
  DeviceBuffer<float> current_score;  ///< large groups: the decayed score by priority position
  DeviceBuffer<unsigned char> alive;  ///< large groups: not yet selected nor dropped
  DeviceBuffer<int> input_of_position;
  DeviceBuffer<int> position_of_input;
  DeviceBuffer<unsigned long long> selection_key;  ///< per group, in selection order: score key << 32 | input
  DeviceBuffer<unsigned long long> sorted_selection_key;
  DeviceBuffer<float> selection_score;
  DeviceBuffer<float> sorted_selection_score;
  DeviceBuffer<int> selected_count;
  /// The rounds path's state (nms_soft_rounds_cuda.cu): per box, and per adjacency entry (the graph and the
  /// decays received), as bytes carved there; they grow with the largest call and are kept.
  DeviceBuffer<unsigned char> rounds_state, rounds_adjacency, rounds_history;
  int shared_boxes_max = 0;  ///< boxes whose state fits one block's shared memory on this device
  /// The rounds kernel's co-resident blocks on this device (0: no cooperative launch there; -1: not yet asked).
  int rounds_blocks_max = -1;
  std::size_t shared_bytes_allowed[2] = {0, 0};  ///< dynamic shared memory already allowed (axis, rotated)
};

/// Boxes of soft_small_kernel's state that fit the opt-in shared memory `optin_bytes` of one block.
int soft_shared_boxes_max(int optin_bytes);

/// Soft-NMS of the ranked boxes into `result`. Synchronizes up to three times: the rounds path's edge count and
/// end (nms_soft_rounds.cuh), and the group count where the sequential kernels run.
template <bool kRot>
void soft_nms(const NmsInput& in, const NmsParams& params, const Ranking& ranked, SoftBuffers& buffers, CubScratch& cub,
              HostReadback& readback, DeviceResult& result, StreamHandle stream);

// ---- fused small hard NMS (nms_fused_cuda.cu) ----

struct FusedBuffers {
  DeviceBuffer<int> input_of_rank;
  DeviceBuffer<int> live_count;
  DeviceBuffer<int> suppressor_count;                ///< per box: entries in its list
  DeviceBuffer<unsigned short> suppressor_tile;      ///< per box, per entry: column tile
  DeviceBuffer<unsigned long long> suppressor_word;  ///< per box, per entry: bits of that tile
  int max_boxes = 0;                                 ///< calls up to this size take the fused path
};

/// The fused path's default limit, overridden by S3D_NMS_FUSED_MAX_BOXES (0..16384; benchmarks, tests). The
/// engine clamps it with fused_max_boxes_for() to what the device's shared memory allows.
int fused_max_boxes_from_env();
/// Raises the dynamic shared memory limit of the fused sort kernels that calls of up to `max_boxes` boxes use
/// (once per engine); `max_boxes` comes from fused_max_boxes_for(), so every variant configured fits the device.
void configure_fused_kernels(int max_boxes);
/// Hard axis-aligned NMS without an active pre_top_k, up to `max_boxes` boxes.
bool fused_applies(const NmsInput& in, const NmsParams& params, int max_boxes);
/// Three kernels, no host synchronization (min_score and max_dets without image ids on the device). Returns the
/// tile pairs of the dense lower triangle it evaluates.
long long fused_nms(const NmsInput& in, const NmsParams& params, FusedBuffers& buffers, DeviceResult& result,
                    StreamHandle stream);

// ---- fused grid hard NMS, mid-sized calls (nms_fused_grid_cuda.cu) ----

/// The fused grid path's capacity: calls above the one-block fused path's limit and up to this size take it.
constexpr int kFusedGridMaxBoxes = 16384;

struct FusedGridBuffers {
  DeviceBuffer<int> input_of_rank;
  DeviceBuffer<float4> boxes;                                ///< by rank: x1, y1, x2, y2
  DeviceBuffer<float> areas;                                 ///< by rank: the AxisBox area
  DeviceBuffer<std::int64_t> groups;                         ///< by rank (grouped calls)
  DeviceBuffer<unsigned long long> kept_bits, removed_bits;  ///< the scan's state: a bit per box by rank
  DeviceBuffer<int> live_count;
  DeviceBuffer<unsigned> counters;  ///< the scan's three rotating per-round counters
  DeviceBuffer<int> rounds;
  DeviceBuffer<int> suppressor_count;                ///< per box: entries in its list
  DeviceBuffer<unsigned short> suppressor_tile;      ///< per box, per entry: column tile
  DeviceBuffer<unsigned long long> suppressor_word;  ///< per box, per entry: bits of that tile
  int max_boxes = 0;                                 ///< calls up to this size may take the path (0: off)
  int blocks_per_sm = 0;                             ///< co-resident blocks of the cooperative scan kernel
};

/// The fused grid path's limit, S3D_NMS_FUSED_GRID_MAX_BOXES (0..16384; default 16384; 0 = off).
int fused_grid_max_boxes_from_env();
/// Sets `buffers.max_boxes` for the current device `device`: `requested` clamped to what its opt-in shared memory
/// per block (`optin_bytes`) allows, 0 where it cannot launch cooperatively.
void configure_fused_grid(int device, int optin_bytes, int requested, FusedGridBuffers& buffers);
/// Hard axis-aligned NMS without an active pre_top_k, up to `max_boxes` boxes.
bool fused_grid_applies(const NmsInput& in, const NmsParams& params, int max_boxes);
/// Three kernels, no host synchronization (min_score and max_dets without image ids on the device). Returns the
/// tile pairs of the dense lower triangle it evaluates; the round count stays on the device (buffers.rounds).
long long fused_grid_nms(const NmsInput& in, const NmsParams& params, int sm_count, FusedGridBuffers& buffers,
                         DeviceResult& result, StreamHandle stream);

// ---- max_dets (nms_max_dets_cuda.cu) ----

struct MaxDetsBuffers {
  DeviceBuffer<unsigned long long> image_key;  ///< by output position
  DeviceBuffer<unsigned long long> sorted_image_key;
  DeviceBuffer<int> position_sequence;  ///< 0..k-1: the image sort's values
  DeviceBuffer<int> position_of_sorted;
  SegmentStarts image_segments;
  DeviceBuffer<unsigned char> selected;  ///< by output position: within its image's first max_dets
  DeviceBuffer<int> selected_position;
  DeviceBuffer<int> selected_count;
  DeviceBuffer<std::int64_t> compacted_keep;  ///< swapped with the result's
  DeviceBuffer<float> compacted_scores;
};

/// Keeps the first max_dets boxes of each image (of all boxes without image ids). Synchronizes with image ids.
void apply_max_dets(const NmsInput& in, const NmsParams& params, MaxDetsBuffers& buffers, CubScratch& cub,
                    HostReadback& readback, DeviceResult& result, StreamHandle stream);

}  // namespace s3d::detection::detail
