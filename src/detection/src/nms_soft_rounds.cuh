#pragma once
// Soft-NMS by parallel rounds over the graph of interacting boxes (nms_soft_rounds_cuda.cu): the fast path of
// soft_nms (nms_soft_cuda.cu) for graphs of bounded density, with the same decisions and the same float scores
// as mmcv's sequential loop.
#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {

/// Past this many adjacency entries per box on average the rounds path is not taken: a dense graph has long
/// chains of dependent selections (a clique of k boxes needs k rounds), where the sequential kernels are faster.
constexpr long long kSoftRoundsMaxAverageDegree = 256;
/// Adjacency entries (both directions of each interacting pair) the rounds path allocates at most: 16 bytes an
/// entry (the edge and the decay history slot), 512 MiB in all.
constexpr long long kSoftRoundsMaxEntries = 1LL << 25;

/// Rounds the rounds path runs at most before it gives the input to the sequential kernels: each round costs about
/// 20 us on an H200 where the loop costs about 1.6 us a selection, so a chain of dependent selections (each box
/// overlapping the next, scores falling) longer than this costs at most this many rounds more than the loop.
/// Detector outputs need far fewer (55 for bench_nms' 10k clustered boxes, Gaussian). max(256, boxes / 64), or
/// S3D_NMS_SOFT_MAX_ROUNDS (>= 1; tests).
int soft_rounds_max(int boxes);

/// Soft-NMS of the ranked boxes by rounds: writes each selected box's key (score key << 32 | input index) and
/// final score at its priority position of `buffers.selection_key` / `selection_score` (~0 elsewhere) and the
/// number of selections to `buffers.selected_count`. `margin` is the bounds pre-test's (prune_margin).
/// Synchronizes twice (the edge count; whether the rounds finished). Returns false, leaving the selections to the
/// sequential kernels, when the graph of interacting pairs is denser than kSoftRoundsMaxAverageDegree or larger
/// than kSoftRoundsMaxEntries, or when soft_rounds_max rounds did not finish.
template <bool kRot>
bool soft_nms_rounds(const NmsInput& in, const NmsParams& params, const Ranking& ranked, SoftBuffers& buffers,
                     float margin, CubScratch& cub, HostReadback& readback, StreamHandle stream);

}  // namespace s3d::detection::detail
