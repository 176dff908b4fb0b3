// Soft-NMS by parallel rounds. mmcv's loop selects one box at a time, but a selection changes only the boxes it
// interacts with: those whose decay weight is not exactly 1 (a box whose bounds miss the selected one's, or whose
// IoU is at most the linear threshold, or so small that the Gaussian weight rounds to 1, keeps its score bit for
// bit). So the boxes of each group and the interacting pairs form a graph, built here by a sweep over the boxes
// sorted by x1; then every round selects, in parallel, each live box whose current key (score, then input index)
// beats the keys of all its live neighbours, and every live box folds in the decays of its newly selected
// neighbours.
//
// Why this is the sequential result, bit for bit: scores only decrease, so the loop's selections come in
// descending key order and a box is decayed by its selected neighbours in that order. A round's local maxima are
// selected by the loop before any of their neighbours, with their current scores (an induction on the loop's
// order: a box missing a decay from a neighbour selected earlier by the loop would lose to that neighbour). But
// a box can receive a decay in one round from a neighbour that the loop selects after another neighbour still to
// come, so each box keeps its received decays sorted by the selector's key, each with the score after it, and,
// when a decay arrives out of order, refolds its score from that decay's place in key order: the same products
// in the same order as the loop, and the same drops (a product under soft_min_score drops the box, as the loop
// does at that decay).
//
// The output order (final score descending, then input index) is the loop's selection order within a group, so
// the selections are written by position and sorted afterwards, as the sequential kernels' are.
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "nms_soft_rounds.cuh"

namespace s3d::detection::detail {
namespace {

namespace cg = cooperative_groups;

constexpr unsigned long long kNoKey = ~0ull;  ///< a box that is not live (dropped, selected, below soft_min_score)
constexpr unsigned kNotSwept = 0xFFFFFFFFu;   ///< sweep key of a box that interacts with nothing
constexpr int kSweepBlock = 256;
/// Threads that share one box's sweep (strided over the later boxes): short serial chains per thread.
constexpr int kSweepLanes = 8;
constexpr int kRoundBlock = 512;
/// Threads that share one box's adjacency list in the selection phase; each reads kRoundBatch entries at once,
/// so a box of up to kRoundLanes * kRoundBatch neighbours costs two dependent loads.
constexpr int kRoundLanes = 16;
constexpr int kRoundBatch = 8;
/// Received decays a fold takes into registers at once (more arrive in one round only at boxes of many
/// neighbours; they are taken in several batches).
constexpr int kFoldBatch = 4;
/// Co-resident blocks per SM the rounds kernel uses at most: a round's latency chain is a few loads when each
/// thread has at most one box, and fewer blocks make the grid barrier quicker.
constexpr int kRoundBlocksPerSm = 2;

/// One entry of a box's adjacency list: an interacting neighbour and the weight this box's selection gives it.
struct SoftEdge {
  int other;
  float weight;
};
/// One decay a box received: the selector's key (its place in the loop's order), the weight, and the box's
/// score after this decay and all earlier ones (so a late arrival refolds from its place, not from the start).
struct alignas(16) SoftDecay {
  unsigned long long key;
  float weight;
  float prefix;
};

struct SoftArgs {
  int method;  // 1 linear, 2 gaussian
  float thr;
  bool ge;
  float sigma;
  float min_score;
  int offset;
  float margin;
};

__device__ __forceinline__ unsigned long long live_key(float s, int input) {
  unsigned bits;
  memcpy(&bits, &s, 4);
  return (static_cast<unsigned long long>(descending_score_key(s, bits)) << 32) | static_cast<unsigned>(input);
}

/// The weights that `a`'s selection gives `b` and `b`'s gives `a`, as the CPU computes them (the selected box
/// first). Axis-aligned IoU is symmetric (max/min/+ commute), rotated IoU is not (it is centred on the first box).
template <bool kRot>
__device__ __forceinline__ void pair_weights(const BoxType<kRot>& a, const BoxType<kRot>& b, const SoftArgs& s,
                                             float& w_ab, float& w_ba) {
  if constexpr (kRot) {
    w_ab = soft_weight(rot_iou(a, b), s.method, s.thr, s.ge, s.sigma);
    w_ba = soft_weight(rot_iou(b, a), s.method, s.thr, s.ge, s.sigma);
  } else {
    w_ab = soft_weight(axis_iou(a, b, s.offset), s.method, s.thr, s.ge, s.sigma);
    w_ba = w_ab;
  }
}

/// Per priority position p: the initial state, and the sweep key (group << 32 | x1 order; boxes that can
/// interact with nothing sort last in their group).
__global__ void rounds_init_kernel(int m, const int* rank_of_priority, const int* input_of_rank, const float* scores,
                                   const int* group_of_box, const float4* bounds, const unsigned char* can,
                                   float min_score, unsigned long long* key, float* initial, float* current,
                                   int* input_of_p, int* degree, int* received, int* folded,
                                   unsigned long long* selection_key, unsigned long long* sweep_key, int* sweep_value,
                                   unsigned long long* entries, unsigned* counters) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p == 0) {
    degree[m] = 0;  // the exclusive scan's extra element: offsets[m] = all entries
    *entries = 0;
    counters[0] = counters[1] = counters[2] = counters[3] = 0;
  }
  if (p >= m) return;
  const int i = input_of_rank[rank_of_priority ? rank_of_priority[p] : p];
  const float sc = scores[i];
  const bool live = sc >= min_score;
  key[p] = live ? live_key(sc, i) : kNoKey;
  initial[p] = sc;
  current[p] = sc;
  input_of_p[p] = i;
  degree[p] = 0;
  received[p] = 0;
  folded[p] = 0;
  selection_key[p] = kNoKey;
  const unsigned x = live && can[p] ? ordered_bits(bounds[p].x) : kNotSwept;
  sweep_key[p] = (static_cast<unsigned long long>(group_of_box[p]) << 32) | x;
  sweep_value[p] = p;
}

/// Bounds in sweep order; NaN x1 marks a box that takes no part (the sweep stops at it: they come last).
__global__ void sweep_gather_kernel(int m, const unsigned long long* sorted_key, const int* position,
                                    const float4* bounds, float4* swept) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= m) return;
  const bool takes_part = static_cast<unsigned>(sorted_key[s] & 0xFFFFFFFFull) != kNotSwept;
  swept[s] = takes_part ? bounds[position[s]] : make_float4(NAN, NAN, NAN, NAN);
}

/// Sweep over the boxes of each group in x1 order: box s meets every later box whose x1 is within its x extent
/// (each intersecting pair once, from the one first in x1 order), kSweepLanes threads per box taking every
/// kSweepLanes-th later box. kFill = false counts the interacting pairs per box (both ends) and in all;
/// kFill = true writes both adjacency entries of each, filling each list from its end.
template <bool kRot, bool kFill>
__global__ void __launch_bounds__(kSweepBlock)
    sweep_kernel(int m, const float4* swept, const int* position, const int* group_of_box, const int* group_end,
                 const BoxType<kRot>* prep, SoftArgs args, int* degree, const int* offsets, SoftEdge* adjacency,
                 unsigned long long* entries) {
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int s = static_cast<int>(thread / kSweepLanes), lane = static_cast<int>(thread % kSweepLanes);
  unsigned long long found = 0;
  if (s < m) {
    const float4 bs = swept[s];
    if (!isnan(bs.x)) {
      const int p = position[s];
      const int end = group_end[group_of_box[p]];
      const float limit = bs.z + args.margin;
      const BoxType<kRot> box_p = prep[p];
      for (int t = s + 1 + lane; t < end; t += kSweepLanes) {
        const float4 bt = swept[t];
        if (!(bt.x <= limit)) break;  // sorted by x1: no later box reaches back
        if (!bounds_may_intersect(bs, bt, args.margin)) continue;
        const int q = position[t];
        float w_pq, w_qp;
        pair_weights<kRot>(box_p, prep[q], args, w_pq, w_qp);
        if (w_pq == 1.f && w_qp == 1.f) continue;  // neither selection can change the other's score
        if constexpr (kFill) {
          adjacency[offsets[p] + atomicSub(&degree[p], 1) - 1] = SoftEdge{q, w_pq};
          adjacency[offsets[q] + atomicSub(&degree[q], 1) - 1] = SoftEdge{p, w_qp};
        } else {
          atomicAdd(&degree[p], 1);
          atomicAdd(&degree[q], 1);
          found += 2;
        }
      }
    }
  }
  if constexpr (!kFill) {
    for (int o = 16; o > 0; o >>= 1) found += __shfl_down_sync(0xFFFFFFFFu, found, o);
    if ((threadIdx.x & 31) == 0 && found) atomicAdd(entries, found);
  }
}

struct RoundsArgs {
  int m;
  const int* offsets;
  const SoftEdge* adjacency;
  const int* input_of_p;
  const float* initial;
  float* current;
  unsigned long long* key;  // current key of each live box, kNoKey otherwise; read across blocks: __ldcg
  int* received;            // decays appended to the box's history (atomic, by the selectors)
  int* folded;              // decays already folded into `current` (the history's sorted prefix)
  SoftDecay* history;       // per box, at its adjacency offset: capacity = its degree (a neighbour decays it once)
  unsigned long long* selection_key;
  float* selection_score;
  float min_score;
  unsigned* counters;  // selections per round, three rotating slots, then the flag "gave up" (kSoftRoundsMax)
  int* selected_total;
  int max_rounds;
};

/// History entries are written by the selectors (other SMs): read them from L2, never from a stale L1 line.
__device__ __forceinline__ SoftDecay load_decay(const SoftDecay* d) {
  const ulonglong2 v = __ldcg(reinterpret_cast<const ulonglong2*>(d));
  SoftDecay r;
  r.key = v.x;
  const unsigned lo = static_cast<unsigned>(v.y & 0xFFFFFFFFull), hi = static_cast<unsigned>(v.y >> 32);
  memcpy(&r.weight, &lo, 4);
  memcpy(&r.prefix, &hi, 4);
  return r;
}

template <typename T>
__device__ __forceinline__ void swap_values(T& x, T& y) {
  const T t = x;
  x = y;
  y = t;
}

/// Folds the decays box p received since the last round into its score and key. The history stays sorted by
/// the selectors' keys (the loop's order), each entry with the score after it. New decays are taken in batches
/// into registers and sorted; older entries with later keys move up past them; the score is refolded from the
/// first new entry's place (usually the end: then it is the current score times the new weights). A product
/// under min_score drops the box: the loop drops it at that decay and applies no later one.
__device__ void fold_received(const RoundsArgs& a, int p, int count) {
  SoftDecay* h = a.history + a.offsets[p];
  float s = a.current[p];  // the score after the folded prefix of the history
  bool dropped = false;
  for (int c0 = a.folded[p]; c0 < count && !dropped; c0 += kFoldBatch) {
    const int nc = min(kFoldBatch, count - c0);
    SoftDecay nw[kFoldBatch];
#pragma unroll
    for (int u = 0; u < kFoldBatch; ++u) nw[u] = u < nc ? load_decay(h + c0 + u) : SoftDecay{kNoKey, 1.f, 0.f};
#pragma unroll
    for (int i = 1; i < kFoldBatch; ++i)
#pragma unroll
      for (int j = i; j > 0; --j)
        if (nw[j].key < nw[j - 1].key) swap_values(nw[j], nw[j - 1]);
    // Older entries with a later key than the earliest new one move up by the number of new ones before them.
    int later[kFoldBatch];  // older entries after new entry u
#pragma unroll
    for (int u = 0; u < kFoldBatch; ++u) later[u] = 0;
    for (int r = c0 - 1; r >= 0; --r) {
      const SoftDecay old = load_decay(h + r);
      if (old.key < nw[0].key) break;
      int before = 0;  // new entries before it
#pragma unroll
      for (int u = 0; u < kFoldBatch; ++u) {
        before += u < nc && nw[u].key < old.key ? 1 : 0;
        later[u] += old.key > nw[u].key ? 1 : 0;
      }
      h[r + before] = old;
    }
    const int first = c0 - later[0];  // the earliest new entry's place: the fold restarts there
    if (first == c0) {                // all new decays come after the folded ones: fold them from registers
#pragma unroll
      for (int u = 0; u < kFoldBatch; ++u) {
        if (u >= nc || dropped) continue;
        s = s * nw[u].weight;
        dropped = s < a.min_score;
        nw[u].prefix = s;
        h[c0 + u] = nw[u];
      }
      continue;
    }
#pragma unroll
    for (int u = 0; u < kFoldBatch; ++u)
      if (u < nc) h[c0 - later[u] + u] = nw[u];
    s = first == 0 ? a.initial[p] : load_decay(h + first - 1).prefix;
    for (int b0 = first; b0 < c0 + nc && !dropped; b0 += kFoldBatch) {
      SoftDecay e[kFoldBatch];
#pragma unroll
      for (int u = 0; u < kFoldBatch; ++u)
        e[u] = b0 + u < c0 + nc ? load_decay(h + b0 + u) : SoftDecay{kNoKey, 1.f, 0.f};
#pragma unroll
      for (int u = 0; u < kFoldBatch; ++u) {
        if (b0 + u >= c0 + nc || dropped) continue;
        s = s * e[u].weight;
        dropped = s < a.min_score;
        h[b0 + u].prefix = s;
      }
    }
  }
  a.current[p] = s;
  a.folded[p] = count;
  a.key[p] = dropped ? kNoKey : live_key(s, a.input_of_p[p]);
}

/// All rounds in one cooperative kernel. Selection phase: kRoundLanes threads per box check its neighbours'
/// keys; a local maximum records its selection and appends its decay to each live neighbour's history. Fold
/// phase: one thread per box. A grid barrier ends each phase; a round that selects nothing ends the kernel
/// (no live box is left: the best live key is always a local maximum).
__global__ void __launch_bounds__(kRoundBlock, kRoundBlocksPerSm) soft_rounds_kernel(RoundsArgs a) {
  cg::grid_group grid = cg::this_grid();
  const auto tile = cg::tiled_partition<kRoundLanes>(cg::this_thread_block());
  const int lane = static_cast<int>(tile.thread_rank());
  const int thread = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int threads = static_cast<int>(gridDim.x * blockDim.x);
  const int tile_id = thread / kRoundLanes, tiles = threads / kRoundLanes;
  for (int round = 0;; ++round) {
    if (round == a.max_rounds) {  // uniform across the grid: every thread leaves here
      if (thread == 0) a.counters[3] = 1;
      return;
    }
    unsigned selected = 0;
    for (int p = tile_id; p < a.m; p += tiles) {
      const unsigned long long k = __ldcg(&a.key[p]);
      const int begin = a.offsets[p], end = a.offsets[p + 1];
      if (k == kNoKey) continue;
      bool beaten = false;
      for (int base = begin; base < end; base += kRoundLanes * kRoundBatch) {  // tile-uniform trip count
        const int j0 = base + lane;
        int other[kRoundBatch];
#pragma unroll
        for (int u = 0; u < kRoundBatch; ++u) {
          const int j = j0 + u * kRoundLanes;
          other[u] = j < end ? a.adjacency[j].other : -1;
        }
#pragma unroll
        for (int u = 0; u < kRoundBatch; ++u)
          if (other[u] >= 0 && __ldcg(&a.key[other[u]]) < k) beaten = true;
        if (tile.any(beaten)) break;
      }
      if (tile.any(beaten)) continue;
      if (lane == 0) {
        a.selection_key[p] = k;
        a.selection_score[p] = __ldcg(&a.current[p]);  // the fold phase's thread wrote it
        ++selected;
      }
      // Every neighbour gets the decay, also one that is no longer live: a box is decayed by each neighbour at
      // most once (its history has room for all), and one that is not live is never folded again.
      for (int j0 = begin + lane; j0 < end; j0 += kRoundLanes * kRoundBatch) {
        SoftEdge e[kRoundBatch];
#pragma unroll
        for (int u = 0; u < kRoundBatch; ++u) {
          const int j = j0 + u * kRoundLanes;
          e[u] = j < end ? a.adjacency[j] : SoftEdge{-1, 1.f};
        }
        int slot[kRoundBatch], at[kRoundBatch];
#pragma unroll
        for (int u = 0; u < kRoundBatch; ++u) {
          slot[u] = e[u].other >= 0 ? atomicAdd(&a.received[e[u].other], 1) : 0;
          at[u] = e[u].other >= 0 ? a.offsets[e[u].other] : 0;
        }
#pragma unroll
        for (int u = 0; u < kRoundBatch; ++u) {
          if (e[u].other < 0) continue;
          SoftDecay* d = a.history + at[u] + slot[u];
          d->key = k;
          d->weight = e[u].weight;
        }
      }
    }
    for (int o = 16; o > 0; o >>= 1) selected += __shfl_down_sync(0xFFFFFFFFu, selected, o);
    if ((threadIdx.x & 31) == 0 && selected) atomicAdd(&a.counters[round % 3], selected);
    if (thread == 0) a.counters[(round + 1) % 3] = 0;
    grid.sync();
    const unsigned this_round = __ldcg(&a.counters[round % 3]);
    if (this_round == 0) return;
    if (thread == 0) *a.selected_total += static_cast<int>(this_round);
    for (int p = thread; p < a.m; p += threads) {
      const unsigned long long k = __ldcg(&a.key[p]);
      const unsigned long long chosen = __ldcg(&a.selection_key[p]);
      const int count = __ldcg(&a.received[p]);
      if (k == kNoKey) continue;
      if (chosen != kNoKey) {  // selected this round
        a.key[p] = kNoKey;
        continue;
      }
      if (count != a.folded[p]) fold_received(a, p, count);
    }
    grid.sync();
  }
}

/// Carves 256-byte aligned arrays out of one allocation (sized by a first pass with no base).
class Carver {
 public:
  explicit Carver(unsigned char* base) : base_(base) {}
  template <typename T>
  T* take(std::size_t count) {
    used_ = (used_ + 255) & ~static_cast<std::size_t>(255);
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += count * sizeof(T);
    return p;
  }
  std::size_t used() const { return used_; }

 private:
  unsigned char* base_;
  std::size_t used_ = 0;
};

struct RoundsState {
  unsigned long long *key, *sweep_key, *sorted_sweep_key, *entries;
  float *initial, *current;
  float4* swept;
  int *input_of_p, *degree, *offsets, *received, *folded, *sweep_value, *position;
  unsigned* counters;

  void carve(Carver& c, int m) {
    key = c.take<unsigned long long>(m);
    sweep_key = c.take<unsigned long long>(m);
    sorted_sweep_key = c.take<unsigned long long>(m);
    entries = c.take<unsigned long long>(1);
    initial = c.take<float>(m);
    current = c.take<float>(m);
    swept = c.take<float4>(m);
    input_of_p = c.take<int>(m);
    degree = c.take<int>(m + 1);
    offsets = c.take<int>(m + 1);
    received = c.take<int>(m);
    folded = c.take<int>(m);
    sweep_value = c.take<int>(m);
    position = c.take<int>(m);
    counters = c.take<unsigned>(4);
  }
};

}  // namespace

int soft_rounds_max(int boxes) {
  if (const char* env = std::getenv("S3D_NMS_SOFT_MAX_ROUNDS")) {
    const long v = std::strtol(env, nullptr, 10);
    if (v >= 1 && v <= (1L << 30)) return static_cast<int>(v);
  }
  return std::max(256, boxes / 64);
}

template <bool kRot>
bool soft_nms_rounds(const NmsInput& in, const NmsParams& prm, const Ranking& ranked, SoftBuffers& b, float margin,
                     CubScratch& cub, HostReadback& readback, StreamHandle st) {
  const int m = ranked.boxes;
  RoundsState state{};
  Carver sizer(nullptr);
  state.carve(sizer, m);
  b.rounds_state.resize(sizer.used(), st);
  Carver carver(b.rounds_state.data());
  state.carve(carver, m);

  SoftArgs args{};
  args.method = prm.method == NmsMethod::kSoftLinear ? 1 : 2;
  args.thr = prm.iou_threshold;
  args.ge = prm.suppress_at_equal;
  args.sigma = prm.sigma;
  args.min_score = prm.soft_min_score;
  args.offset = prm.pixel_offset;
  args.margin = margin;

  rounds_init_kernel<<<grid_for(m), 256, 0, st>>>(
      m, ranked.rank_of_priority, ranked.input_of_rank, in.scores, b.groups.group_of_box.data(),
      b.prepared.bounds.data(), b.prepared.can_overlap.data(), prm.soft_min_score, state.key, state.initial,
      state.current, state.input_of_p, state.degree, state.received, state.folded, b.selection_key.data(),
      state.sweep_key, state.sweep_value, state.entries, state.counters);
  S3D_CUDA_CHECK_LAUNCH();
  const int key_bits = 32 + bit_length(static_cast<unsigned long long>(m));
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(t, bytes, state.sweep_key, state.sorted_sweep_key, state.sweep_value,
                                               state.position, m, 0, key_bits, st);
      },
      st);
  sweep_gather_kernel<<<grid_for(m), 256, 0, st>>>(m, state.sorted_sweep_key, state.position, b.prepared.bounds.data(),
                                                   state.swept);
  S3D_CUDA_CHECK_LAUNCH();
  const BoxType<kRot>* prep = b.prepared.boxes<kRot>().data();
  const unsigned sweep_grid = grid_for(static_cast<std::size_t>(m) * kSweepLanes, kSweepBlock);
  sweep_kernel<kRot, false><<<sweep_grid, kSweepBlock, 0, st>>>(
      m, state.swept, state.position, b.groups.group_of_box.data(), b.groups.group_end.data(), prep, args, state.degree,
      nullptr, nullptr, state.entries);
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceScan::ExclusiveSum(t, bytes, state.degree, state.offsets, m + 1, st);
      },
      st);

  // The device's limits, asked once per engine (the grid barriers need every block resident, which only a
  // cooperative launch promises).
  if (b.rounds_blocks_max < 0) {
    int device = 0, sm_count = 0, blocks_per_sm = 0, cooperative = 0;
    S3D_CUDA_CHECK(cudaGetDevice(&device));
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
    S3D_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, soft_rounds_kernel, kRoundBlock, 0));
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
    b.rounds_blocks_max = cooperative ? sm_count * std::min(blocks_per_sm, kRoundBlocksPerSm) : 0;
  }
  if (b.rounds_blocks_max < 1) return false;

  const long long entries = readback.read(reinterpret_cast<const long long*>(state.entries), st);
  if (entries > kSoftRoundsMaxEntries || entries > kSoftRoundsMaxAverageDegree * m) return false;

  const std::size_t entry_count = static_cast<std::size_t>(std::max(entries, 1LL));
  b.rounds_adjacency.resize(entry_count * sizeof(SoftEdge), st);
  b.rounds_history.resize(entry_count * sizeof(SoftDecay), st);
  SoftEdge* adjacency = reinterpret_cast<SoftEdge*>(b.rounds_adjacency.data());  // device allocations: 256-B aligned
  SoftDecay* history = reinterpret_cast<SoftDecay*>(b.rounds_history.data());
  sweep_kernel<kRot, true><<<sweep_grid, kSweepBlock, 0, st>>>(
      m, state.swept, state.position, b.groups.group_of_box.data(), b.groups.group_end.data(), prep, args, state.degree,
      state.offsets, adjacency, nullptr);
  S3D_CUDA_CHECK_LAUNCH();

  RoundsArgs ra{};
  ra.m = m;
  ra.offsets = state.offsets;
  ra.adjacency = adjacency;
  ra.input_of_p = state.input_of_p;
  ra.initial = state.initial;
  ra.current = state.current;
  ra.key = state.key;
  ra.received = state.received;
  ra.folded = state.folded;
  ra.history = history;
  ra.selection_key = b.selection_key.data();
  ra.selection_score = b.selection_score.data();
  ra.min_score = prm.soft_min_score;
  ra.counters = state.counters;
  ra.selected_total = b.selected_count.data();
  ra.max_rounds = soft_rounds_max(m);
  const unsigned needed = grid_for(static_cast<std::size_t>(m) * kRoundLanes, kRoundBlock);
  const unsigned grid = std::min(needed, static_cast<unsigned>(b.rounds_blocks_max));
  void* kernel_args[] = {&ra};
  S3D_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(soft_rounds_kernel), dim3(grid),
                                             dim3(kRoundBlock), kernel_args, 0, st));
  if (readback.read(reinterpret_cast<const int*>(state.counters + 3), st) == 0) return true;
  // A chain of dependent selections longer than the cap: the sequential kernels start again from the scores
  // (they reset every selection key; the count is reset here).
  S3D_CUDA_CHECK(cudaMemsetAsync(b.selected_count.data(), 0, sizeof(int), st));
  return false;
}

template bool soft_nms_rounds<false>(const NmsInput&, const NmsParams&, const Ranking&, SoftBuffers&, float,
                                     CubScratch&, HostReadback&, StreamHandle);
template bool soft_nms_rounds<true>(const NmsInput&, const NmsParams&, const Ranking&, SoftBuffers&, float, CubScratch&,
                                    HostReadback&, StreamHandle);

}  // namespace s3d::detection::detail
