// SGM path aggregation, CPU backend: the generic sweep (compiled for AVX-512, AVX2 and baseline x86-64 and
// picked at run time) and the entry points aggregate(), aggregate_wta(), add_volume().
// Layout [y][x][d] (uint8 costs, uint16 sums). Inner loops run over d and vectorise (uint16 lanes).
// Same recurrence and the same scanlines as the CUDA backend; only the grouping of paths into volumes differs
// (integer sums: the total is identical). Two sweeps (top-down + left->right, bottom-up + right->left) on two
// threads; the engine's aggregate_wta() lets them meet in the middle and takes the winner of each row as
// soon as both sweeps have passed it (one volume instead of two, no separate WTA pass).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <omp.h>

#include "aggregate_math.hpp"
#include "aggregate_sweep_cpu.hpp"
#include "backend.hpp"
#include "wta_cpu.hpp"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

/// cur[0..D) = L(p, .) from prev (prev[-1] and prev[D] hold a sentinel (0x7fff)). Returns min_d cur.
__attribute__((always_inline)) inline int path_step_row(const std::uint8_t* __restrict cost,
                                                        const std::uint16_t* __restrict prev, int prev_min,
                                                        std::uint16_t* __restrict cur, int D, int p1, int p2) {
  const std::uint16_t jump = static_cast<std::uint16_t>(prev_min + p2);
  const std::uint16_t pm = static_cast<std::uint16_t>(prev_min);
  const std::uint16_t P1 = static_cast<std::uint16_t>(p1);
  std::uint16_t mn = 0xffff;
  for (int d = 0; d < D; ++d) {
    std::uint16_t m = std::min(prev[d - 1], prev[d + 1]);
    m = static_cast<std::uint16_t>(m + P1);
    std::uint16_t v = std::min(prev[d], m);
    v = std::min(v, jump);
    const std::uint16_t l = static_cast<std::uint16_t>(cost[d] + static_cast<std::uint16_t>(v - pm));
    cur[d] = l;
    mn = std::min(mn, l);
  }
  return mn;
}

/// The same step with byte rows (prev[-1] and prev[D] hold 0xff), exact when max cost + P2 <= 255 (see
/// use_byte_rows()): every L <= max cost + P2 and prev_min <= max cost, so jump = prev_min + P2 fits, and
/// min(m + P1, jump) = min(m, jump - P1) + P1 (P1 < P2) never leaves [0, 255]. Twice the lanes per vector
/// and half the row traffic of the uint16 step.
__attribute__((always_inline)) inline int path_step_row(const std::uint8_t* __restrict cost,
                                                        const std::uint8_t* __restrict prev, int prev_min,
                                                        std::uint8_t* __restrict cur, int D, int p1, int p2) {
  const std::uint8_t jump_m = static_cast<std::uint8_t>(prev_min + p2 - p1);
  const std::uint8_t pm = static_cast<std::uint8_t>(prev_min);
  const std::uint8_t P1 = static_cast<std::uint8_t>(p1);
  std::uint8_t mn = 0xff;
  for (int d = 0; d < D; ++d) {
    std::uint8_t m = std::min(prev[d - 1], prev[d + 1]);
    m = std::min(m, jump_m);
    m = static_cast<std::uint8_t>(m + P1);
    const std::uint8_t v = std::min(prev[d], m);
    const std::uint8_t l = static_cast<std::uint8_t>(cost[d] + static_cast<std::uint8_t>(v - pm));
    cur[d] = l;
    mn = std::min(mn, l);
  }
  return mn;
}

/// First pixel of a path: L = C.
template <typename L>
__attribute__((always_inline)) inline int path_start(const std::uint8_t* __restrict cost, L* __restrict cur, int D) {
  L mn = static_cast<L>(~L{0});
  for (int d = 0; d < D; ++d) {
    cur[d] = cost[d];
    mn = std::min<L>(mn, cost[d]);
  }
  return mn;
}

/// Path rows of one byte are exact when every L (<= max cost + P2, costs <= 64) and the jump fit in one.
bool use_byte_rows(const MatchSpec& s) { return std::max(64, s.max_cost) + s.p2 <= 255 && s.p1 < s.p2 && s.p1 >= 0; }

template <typename L>
constexpr L sentinel() {
  return sizeof(L) == 1 ? static_cast<L>(0xff) : static_cast<L>(0x7fff);
}

/// Winner-take-all of one row from the two sweeps' sums (same decisions as wta_cpu.cpp and the CUDA WTA).
__attribute__((always_inline)) inline void wta_row(const std::uint16_t* __restrict a, const std::uint16_t* __restrict b,
                                                   std::uint16_t* __restrict s, const MatchSpec& spec,
                                                   float* __restrict disparity, float* __restrict confidence,
                                                   RightRow right) {
  const int W = spec.width, D = spec.disparities;
  for (int x = 0; x < W; ++x) {
    const std::uint16_t* pa = a + static_cast<std::ptrdiff_t>(x) * D;
    const std::uint16_t* pb = b + static_cast<std::ptrdiff_t>(x) * D;
    std::uint32_t key = 0xffffffffu;
    for (int d = 0; d < D; ++d) {
      const std::uint16_t v = static_cast<std::uint16_t>(pa[d] + pb[d]);
      s[d] = v;
      key = std::min(key, (static_cast<std::uint32_t>(v) << 16) | static_cast<std::uint32_t>(d));
    }
    wta_pixel(s, static_cast<int>(key & 0xffffu), static_cast<int>(key >> 16), x, spec, disparity, confidence);
    if (right) fold_right<true>(s, x, W, D, right);  // x ascends
  }
}

template <typename L>
std::vector<L>& rows_of(SweepBuffers& b);
template <>
std::vector<std::uint16_t>& rows_of<std::uint16_t>(SweepBuffers& b) {
  return b.rows;
}
template <>
std::vector<std::uint8_t>& rows_of<std::uint8_t>(SweepBuffers& b) {
  return b.rows8;
}
template <typename L>
std::vector<L>& hrow_of(SweepBuffers& b);
template <>
std::vector<std::uint16_t>& hrow_of<std::uint16_t>(SweepBuffers& b) {
  return b.hrow;
}
template <>
std::vector<std::uint8_t>& hrow_of<std::uint8_t>(SweepBuffers& b) {
  return b.hrow8;
}

/// One vertical sweep (top-down for dy = 1, bottom-up for dy = -1) computing, row by row, the vertical path,
/// the two diagonal paths of that sweep (8 paths) and one horizontal path (direction hdx) of each row, and
/// ASSIGNING their sum to `out`. Two sweeps (dy = 1 with hdx = 1, dy = -1 with hdx = -1) cover all paths,
/// reading the cost volume twice and writing two volumes once: far less memory traffic than one
/// read-modify-write pass per path. Each sweep is sequential (rows depend on each other); the two run on
/// two threads.
template <typename L, int kD>
__attribute__((always_inline)) inline void sweep_impl(const std::uint8_t* __restrict cost, const MatchSpec& s, int dy,
                                                      int hdx, std::uint16_t* __restrict out, SweepBuffers& b,
                                                      Meet* meet) {
  std::vector<L>& rows = rows_of<L>(b);
  std::vector<L>& small = hrow_of<L>(b);
  constexpr L kSent = sentinel<L>();
  const int W = s.width, H = s.height, D = kD > 0 ? kD : s.disparities;  // kD: fixed at compile time
  const int stride = D + 2;
  const int np = s.paths == 8 ? 3 : 1;
  // Planes [plane][W][D+2] (sentinels at both ends per pixel). The pixels of a row are visited in the
  // horizontal path's direction sx, so that path needs only its last pixel. Diagonal path dx = -sx reads a
  // pixel not yet visited in this row: one plane (k_direct), updated in place. The vertical path (planes 0
  // and np) and diagonal path dx = +sx (planes k_delayed and np + 1) alternate between two planes by row
  // parity. Less memory than two planes per path, and no separate horizontal-path row pass.
  const std::size_t plane = static_cast<std::size_t>(np == 3 ? np + 2 : np + 1) * W * stride;
  if (rows.size() < plane) rows.resize(plane);
  for (std::size_t k = 0; k < plane; k += stride) {  // only the sentinels are ever read before written
    rows[k] = kSent;
    rows[k + stride - 1] = kSent;
  }
  b.mins.resize(static_cast<std::size_t>(np + 1) * W);
  // small: horizontal path (this pixel / the last one)
  small.assign(static_cast<std::size_t>(2) * stride, kSent);
  if (meet) {
    b.sums.resize(static_cast<std::size_t>(W) * D);
    b.total.resize(static_cast<std::size_t>(D));
  }
  const int sx = hdx > 0 ? 1 : -1;
  const int k_direct = sx > 0 ? 2 : 1;   // dx = -sx
  const int k_delayed = sx > 0 ? 1 : 2;  // dx = +sx
  for (int i = 0; i < H; ++i) {
    const int y = dy > 0 ? i : H - 1 - i;
    const std::uint8_t* crow = cost + static_cast<std::ptrdiff_t>(y) * W * D;
    // fused WTA: the first sweep to reach a row writes its sums straight into `volume`, the second into its
    // own row buffer (then waits, at most about one row's time, until the first has finished that row)
    bool first = true;
    if (meet) first = meet->arrivals[y].fetch_add(1, std::memory_order_acq_rel) == 0;
    std::uint16_t* orow =
        meet && !first ? b.sums.data() : (meet ? meet->volume : out) + static_cast<std::ptrdiff_t>(y) * W * D;
    int hmin = 0;
    for (int j = 0; j < W; ++j) {
      const int x = sx > 0 ? j : W - 1 - j;
      const std::uint8_t* c = crow + static_cast<std::ptrdiff_t>(x) * D;
      // horizontal path
      L* h = small.data() + (j & 1) * stride + 1;
      hmin = j == 0 ? path_start(c, h, D)
                    : path_step_row(c, small.data() + ((j & 1) ^ 1) * stride + 1, hmin, h, D, s.p1, s.p2);
      // vertical path: planes 0 and np alternate between rows
      const std::size_t vcur = (i & 1) ? static_cast<std::size_t>(np) * W : 0;
      const std::size_t vprev = (i & 1) ? 0 : static_cast<std::size_t>(np) * W;
      L* v = rows.data() + (vcur + x) * stride + 1;
      {
        int* m = b.mins.data() + x;
        *m = i == 0 ? path_start(c, v, D)
                    : path_step_row(c, rows.data() + (vprev + x) * stride + 1, *m, v, D, s.p1, s.p2);
      }
      std::uint16_t* o = orow + static_cast<std::ptrdiff_t>(x) * D;
      if (np == 3) {
        // dx = -sx: previous pixel x + sx (not visited yet in this row: still the previous row's)
        L* a = rows.data() + (static_cast<std::size_t>(k_direct) * W + x) * stride + 1;
        {
          int* m = b.mins.data() + static_cast<std::size_t>(k_direct) * W + x;
          const int xp = x + sx;
          if (i == 0 || xp < 0 || xp >= W) {
            *m = path_start(c, a, D);
          } else {
            const L* prev = rows.data() + (static_cast<std::size_t>(k_direct) * W + xp) * stride + 1;
            *m = path_step_row(c, prev, m[sx], a, D, s.p1, s.p2);
          }
        }
        // dx = +sx: previous pixel x - sx (just visited): planes k_delayed and np + 1 alternate between rows
        const std::size_t dcur = (i & 1) ? static_cast<std::size_t>(np + 1) : static_cast<std::size_t>(k_delayed);
        const std::size_t dprev = (i & 1) ? static_cast<std::size_t>(k_delayed) : static_cast<std::size_t>(np + 1);
        L* e = rows.data() + (dcur * W + x) * stride + 1;
        {
          int* mcur =
              b.mins.data() + ((i & 1) ? static_cast<std::size_t>(np) : static_cast<std::size_t>(k_delayed)) * W;
          const int* mprev =
              b.mins.data() + ((i & 1) ? static_cast<std::size_t>(k_delayed) : static_cast<std::size_t>(np)) * W;
          const int xp = x - sx;
          mcur[x] = i == 0 || j == 0
                        ? path_start(c, e, D)
                        : path_step_row(c, rows.data() + (dprev * W + xp) * stride + 1, mprev[xp], e, D, s.p1, s.p2);
        }
        const L* __restrict c0 = v;
        const L* __restrict c1 = a;
        const L* __restrict c2 = e;
        const L* __restrict hh = h;
        for (int d = 0; d < D; ++d) o[d] = static_cast<std::uint16_t>(hh[d] + c0[d] + c1[d] + c2[d]);
      } else {
        const L* __restrict c0 = v;
        const L* __restrict hh = h;
        for (int d = 0; d < D; ++d) o[d] = static_cast<std::uint16_t>(hh[d] + c0[d]);
      }
    }
    if (meet) {
      const std::uint16_t* vrow = meet->volume + static_cast<std::ptrdiff_t>(y) * W * D;
      if (first) {
        meet->stored[y].store(1, std::memory_order_release);
      } else {
        while (meet->stored[y].load(std::memory_order_acquire) == 0) std::this_thread::yield();
        const std::ptrdiff_t r = static_cast<std::ptrdiff_t>(y) * W;
        const RightRow right = start_right_row(*meet, s, b);
        wta_row(orow, vrow, b.total.data(), s, meet->disparity + r, meet->confidence ? meet->confidence + r : nullptr,
                right);
        if (right) right_row_disparities(right, s, meet->right_disparity + r);
      }
    }
  }
}

template <typename L, int kD>
S3D_TARGET("avx512f,avx512bw,avx512vl")
void sweep_avx512(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
                  Meet* meet) {
  sweep_impl<L, kD>(cost, s, dy, hdx, out, b, meet);
}
template <typename L, int kD>
S3D_TARGET("avx2")
void sweep_avx2(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
                Meet* meet) {
  sweep_impl<L, kD>(cost, s, dy, hdx, out, b, meet);
}
template <typename L, int kD>
void sweep_base(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
                Meet* meet) {
  sweep_impl<L, kD>(cost, s, dy, hdx, out, b, meet);
}

template <typename L, int kD>
SweepFn pick_sweep() {
#if S3D_AGG_DISPATCH
  __builtin_cpu_init();
  const int cap = cpu_isa_cap();
  if (cap >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return sweep_avx512<L, kD>;
  if (cap >= 1 && __builtin_cpu_supports("avx2")) return sweep_avx2<L, kD>;
#endif
  return sweep_base<L, kD>;
}
void sweep(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
           Meet* meet) {
  // common disparity counts get a variant with D fixed (unrolled row steps, no loop overhead per pixel)
  static const SweepFn fns[2][4] = {{pick_sweep<std::uint16_t, 0>(), pick_sweep<std::uint16_t, 64>(),
                                     pick_sweep<std::uint16_t, 128>(), pick_sweep<std::uint16_t, 256>()},
                                    {pick_sweep<std::uint8_t, 0>(), pick_sweep<std::uint8_t, 64>(),
                                     pick_sweep<std::uint8_t, 128>(), pick_sweep<std::uint8_t, 256>()}};
  const int D = s.disparities;
  const int k = D == 64 ? 1 : D == 128 ? 2 : D == 256 ? 3 : 0;
  if (use_byte_rows(s)) {
    static const SweepFn bytes512[3] = {avx512_byte_sweep(64), avx512_byte_sweep(128), avx512_byte_sweep(256)};
    if (k > 0 && bytes512[k - 1]) return bytes512[k - 1](cost, s, dy, hdx, out, b, meet);
  }
  fns[use_byte_rows(s) ? 1 : 0][k](cost, s, dy, hdx, out, b, meet);
}

/// Kept per thread across calls: no page faults on every frame (the sentinels are rewritten per sweep).
SweepBuffers& thread_buffers() {
  static thread_local SweepBuffers buffers;
  return buffers;
}

}  // namespace

void aggregate(const std::uint8_t* cost, const MatchSpec& s, std::uint16_t* volume_a, std::uint16_t* volume_b) {
  const int threads = std::max(1, std::min(2, omp_get_max_threads()));
#pragma omp parallel num_threads(threads)
  {
    SweepBuffers& buffers = thread_buffers();
#pragma omp sections
    {
#pragma omp section
      sweep(cost, s, 1, 1, volume_a, buffers, nullptr);
#pragma omp section
      sweep(cost, s, -1, -1, volume_b, buffers, nullptr);
    }
  }
}

RightRow start_right_row(const Meet& meet, const MatchSpec& spec, SweepBuffers& b) {
  if (!meet.right_disparity) return {};
  const std::size_t n = static_cast<std::size_t>(spec.width) + spec.disparities - 1;
  b.right_sum.assign(n, 0xffff);
  b.right_d.assign(n, kNoRightD);
  return {b.right_sum.data(), b.right_d.data()};
}

/// The engine's aggregation + winner-take-all (same results as aggregate() then wta()): `volume` is
/// W*H*D scratch holding, per row, the sums of whichever sweep finished that row first.
void aggregate_wta(const std::uint8_t* cost, const MatchSpec& s, std::uint16_t* volume, float* disparity,
                   float* confidence, float* right_disparity) {
  Meet meet;
  meet.arrivals.reset(new std::atomic<int>[static_cast<std::size_t>(s.height)]);
  meet.stored.reset(new std::atomic<int>[static_cast<std::size_t>(s.height)]);
  for (int y = 0; y < s.height; ++y) {
    meet.arrivals[y].store(0, std::memory_order_relaxed);
    meet.stored[y].store(0, std::memory_order_relaxed);
  }
  meet.volume = volume;
  meet.disparity = disparity;
  meet.confidence = confidence;
  meet.right_disparity = right_disparity;
  const int threads = std::max(1, std::min(2, omp_get_max_threads()));
  // One thread runs both sweeps in turn (the second then finds every row stored); two run one each and
  // wait only when one reaches a row the other is storing.
#pragma omp parallel num_threads(threads)
  {
    SweepBuffers& buffers = thread_buffers();
#pragma omp sections
    {
#pragma omp section
      sweep(cost, s, 1, 1, nullptr, buffers, &meet);
#pragma omp section
      sweep(cost, s, -1, -1, nullptr, buffers, &meet);
    }
  }
}

// The sizes sweep_impl and sweep_bytes_avx512 resize to: row planes of L (uint8 with byte rows, else
// uint16), the horizontal path's two pixels, the path minima, the fused WTA's row of sums and its total.
std::size_t sweep_buffer_bytes(const MatchSpec& s) {
  const std::size_t W = static_cast<std::size_t>(s.width), D = static_cast<std::size_t>(s.disparities);
  const std::size_t stride = D + 2, np = s.paths == 8 ? 3 : 1, planes = np == 3 ? np + 2 : np + 1;
  const std::size_t l_bytes = use_byte_rows(s) ? sizeof(std::uint8_t) : sizeof(std::uint16_t);
  return (planes * W * stride + 2 * stride) * l_bytes + (np + 1) * W * sizeof(int) +
         (W * D + D) * sizeof(std::uint16_t) + 2 * (W + D - 1) * sizeof(std::uint16_t);
}

std::size_t this_thread_sweep_bytes() {
  const SweepBuffers& b = thread_buffers();
  return b.rows.capacity() * sizeof(std::uint16_t) + b.hrow.capacity() * sizeof(std::uint16_t) + b.rows8.capacity() +
         b.hrow8.capacity() + b.mins.capacity() * sizeof(int) +
         (b.sums.capacity() + b.total.capacity()) * sizeof(std::uint16_t) +
         (b.right_sum.capacity() + b.right_d.capacity()) * sizeof(std::uint16_t);
}

void add_volume(std::uint16_t* a, const std::uint16_t* b, std::size_t count) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(count); ++i)
    a[i] = static_cast<std::uint16_t>(a[i] + b[i]);
}

}  // namespace s3d::stereo::detail::cpu
