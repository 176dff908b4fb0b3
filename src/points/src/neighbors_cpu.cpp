// The CPU neighbour backend: a counting sort of the points into the grid, then every query searched on its own
// (OpenMP) with the same routines the CUDA backend runs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "neighbors_impl.hpp"
#include "s3d/core/cpu_dispatch.hpp"

namespace s3d::points {
namespace {

/// detail::PointerRow's contract (sorted by (key, index), the last slot falls off) with an insertion that
/// shifts only the slots behind the new entry, from the end: PointerRow walks all K slots on every insert,
/// which dominated radius search on the CPU (K = 64, ~50 inserts per query). The row's content after every
/// insert is the same sorted list, so the answers stay bit-identical to the CUDA backend's.
class CpuRow {
 public:
  CpuRow(float* key, float* d2, std::int32_t* idx, int k) : key_(key), d2_(d2), idx_(idx), k_(k) {
    for (int j = 0; j < k_; ++j) {
      key_[j] = d2_[j] = __builtin_huge_valf();
      idx_[j] = 0x7fffffff;
    }
  }
  int k() const { return k_; }
  float worst_key() const { return key_[k_ - 1]; }
  std::int32_t worst_index() const { return idx_[k_ - 1]; }
  bool accepts(float key, std::int32_t idx) const {
    return detail::neighbor_before(key, idx, key_[k_ - 1], idx_[k_ - 1]);
  }
  void insert(float key, float d2, std::int32_t idx) {
    int j = k_ - 1;  // the old last entry falls off; move the larger ones back by one
    for (; j > 0 && detail::neighbor_before(key, idx, key_[j - 1], idx_[j - 1]); --j) {
      key_[j] = key_[j - 1], d2_[j] = d2_[j - 1], idx_[j] = idx_[j - 1];
    }
    key_[j] = key, d2_[j] = d2, idx_[j] = idx;
  }
  std::int32_t index_at(int j) const { return idx_[j]; }
  float d2_at(int j) const { return d2_[j]; }

 private:
  float* key_;
  float* d2_;
  std::int32_t* idx_;
  int k_;
};

/// Squared distances from q to `count` sorted points (4 floats each), the shared squared_distance.
S3D_ALWAYS_INLINE void span_d2_body(const float* xyz, std::int32_t count, float qx, float qy, float qz, float* out) {
  for (std::int32_t p = 0; p < count; ++p)
    out[p] = detail::squared_distance(xyz[4 * p], xyz[4 * p + 1], xyz[4 * p + 2], qx, qy, qz);
}
void span_d2_baseline(const float* xyz, std::int32_t count, float qx, float qy, float qz, float* out) {
  span_d2_body(xyz, count, qx, qy, qz, out);
}
S3D_TARGET_AVX2 void span_d2_avx2(const float* xyz, std::int32_t count, float qx, float qy, float qz, float* out) {
  span_d2_body(xyz, count, qx, qy, qz, out);
}

/// Whether a point of cells x0..x1 of row (y, z) can lie at a squared distance <= `bound2` from q, from the
/// distance between q and the cells' box, less the grid's margin (a point sits at most that far outside its
/// cell) and a relative slack for the rounding of this bound.
bool row_within(const detail::GridShape& s, int x0, int x1, int y, int z, float qx, float qy, float qz, float bound2) {
  const auto gap = [&](float q, int axis, int c0, int c1) {
    const float lo = s.origin[axis] + static_cast<float>(c0) * s.cell;
    const float hi = s.origin[axis] + static_cast<float>(c1 + 1) * s.cell;
    return q < lo ? lo - q : (q > hi ? q - hi : 0.f);
  };
  const float dx = gap(qx, 0, x0, x1), dy = gap(qy, 1, y, y), dz = gap(qz, 2, z, z);
  const float lower = std::sqrt((dx * dx + dy * dy) + dz * dz) * (1.f - 1e-5f) - s.margin;
  return !(lower > 0.f && lower * lower > bound2);
}

/// The squared distances from q to the points of cells x0..x1 of row (y, z), which are contiguous in the sorted
/// points: one vectorised pass (AVX2 where enabled); the buffer is reused from query to query.
class RowDistances {
 public:
  explicit RowDistances(bool avx2) : d2_of_(avx2 ? span_d2_avx2 : span_d2_baseline) {}
  /// Sorted positions [*first, *end) of the row's points; d2(p - *first) is point p's squared distance.
  void compute(const detail::GridView& g, int x0, int x1, int y, int z, float qx, float qy, float qz,
               std::int32_t* first, std::int32_t* end) {
    *first = g.begin[detail::grid_cell(g.shape, x0, y, z)];
    *end = g.begin[detail::grid_cell(g.shape, x1, y, z) + 1];
    if (*first == *end) return;
    d2_.resize(static_cast<std::size_t>(*end - *first));
    d2_of_(g.xyz + 4 * static_cast<long long>(*first), *end - *first, qx, qy, qz, d2_.data());
  }
  float d2(std::int32_t i) const { return d2_[static_cast<std::size_t>(i)]; }

 private:
  void (*d2_of_)(const float*, std::int32_t, float, float, float, float*);
  std::vector<float> d2_;
};

struct Candidate {
  float d2;
  std::int32_t index;
};

/// A ball query ordered by distance, the CPU's way to the shared search's answer: the shared row keeps the K
/// first of every passing point in the total order (d2, index), one sorted insertion at a time (~50 inserts
/// of up to 64 moves per KITTI query). Here the same box of cells is read a row of cells at a time (a row's
/// cells are contiguous in the sorted points, so one vectorised distance pass covers them), the passing points
/// are collected and the first K of them sorted: the same set, order and count.
class BallByDistance {
 public:
  explicit BallByDistance(bool avx2) : rows_(avx2) {}

  /// Returns the number of points in the ball; the first min(count, K) candidates() are the row.
  int search(const detail::GridView& g, const detail::QuerySpec& spec, float qx, float qy, float qz) {
    const detail::GridShape& s = g.shape;
    const float reach = sqrtf(spec.radius2) + s.margin;  // visit_box's cube
    const int x0 = detail::grid_coordinate(s, qx - reach, 0), x1 = detail::grid_coordinate(s, qx + reach, 0);
    const int y0 = detail::grid_coordinate(s, qy - reach, 1), y1 = detail::grid_coordinate(s, qy + reach, 1);
    const int z0 = detail::grid_coordinate(s, qz - reach, 2), z1 = detail::grid_coordinate(s, qz + reach, 2);
    found_.clear();
    for (int z = z0; z <= z1; ++z)
      for (int y = y0; y <= y1; ++y) {
        if (!row_within(s, x0, x1, y, z, qx, qy, qz, spec.radius2)) continue;  // no d2 < radius2 there
        std::int32_t first, end;
        rows_.compute(g, x0, x1, y, z, qx, qy, qz, &first, &end);
        for (std::int32_t p = first; p < end; ++p) {
          const float d2 = rows_.d2(p - first);
          if (!(d2 < spec.radius2)) continue;
          if (spec.min_radius2 > 0.f && !(d2 == 0.f || d2 >= spec.min_radius2)) continue;
          found_.push_back({d2, g.index[p]});
        }
      }
    const int kept = std::min<int>(spec.k, static_cast<int>(found_.size()));
    const auto before = [](const Candidate& a, const Candidate& b) {
      return detail::neighbor_before(a.d2, a.index, b.d2, b.index);
    };
    if (kept < static_cast<int>(found_.size()))
      std::nth_element(found_.begin(), found_.begin() + kept, found_.end(), before);
    std::sort(found_.begin(), found_.begin() + kept, before);
    return static_cast<int>(std::min<std::size_t>(found_.size(), 0x7fffffff));
  }
  const Candidate* candidates() const { return found_.data(); }

 private:
  RowDistances rows_;
  std::vector<Candidate> found_;
};

/// kNN, the shared search's visits with the distances of a row of cells computed in one vectorised pass: a
/// point whose distance exceeds the row's worst key cannot enter it (the worst key only shrinks), so only the
/// others take search_query's steps (self, accepts, insert), in the same order. Same rows and count.
class KnnByRows {
 public:
  explicit KnnByRows(bool avx2) : rows_(avx2) {}

  int search(const detail::GridView& g, float qx, float qy, float qz, std::int32_t self, CpuRow& row) {
    long long found = 0;
    const detail::GridShape& s = g.shape;
    auto run = [&](int x0, int x1, int y, int z) {
      // A full row never takes a point beyond its worst key (the key only shrinks), and `found` is K once the
      // row is full: such cells change nothing.
      if (row.worst_key() < __builtin_huge_valf() && !row_within(s, x0, x1, y, z, qx, qy, qz, row.worst_key())) return;
      std::int32_t first, end;
      rows_.compute(g, x0, x1, y, z, qx, qy, qz, &first, &end);
      found += end - first;
      for (std::int32_t p = first; p < end; ++p) {
        const float d2 = rows_.d2(p - first);
        if (d2 > row.worst_key()) continue;
        const std::int32_t idx = g.index[p];
        if (idx == self) {
          --found;
          continue;
        }
        if (row.accepts(d2, idx)) row.insert(d2, d2, idx);
      }
    };
    auto done = [&](float bound2) { return row.worst_key() < bound2; };
    detail::visit_shells(g, qx, qy, qz, run, done);
    return found < row.k() ? static_cast<int>(found) : row.k();
  }

 private:
  RowDistances rows_;
};

/// The first entries of sorted candidates as finish_row reads a row.
struct SortedRow {
  const Candidate* c;
  int slots;
  int k() const { return slots; }
  std::int32_t index_at(int j) const { return c[j].index; }
  float d2_at(int j) const { return c[j].d2; }
};

class CpuNeighbors final : public NeighborEngine::Impl {
 public:
  using Impl::Impl;

  void run_host(const SearchRequest& request) override {
    const detail::GridView grid = build_grid(request);
    const std::int64_t queries = request.query_count();
    const int k = request.spec.k;
    const bool self = request.queries.size == 0;
    const float* q = self ? request.points.xyz : request.queries.xyz;
    const bool by_distance = request.spec.ball && !request.spec.by_index;
    const bool avx2 = cpu_avx2_enabled();
#pragma omp parallel
    {
      std::vector<float> key(static_cast<std::size_t>(k)), d2(static_cast<std::size_t>(k));
      std::vector<std::int32_t> idx(static_cast<std::size_t>(k));
      BallByDistance ball(avx2);
      KnnByRows knn(avx2);
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t i = 0; i < queries; ++i) {
        std::int32_t* idx_out = request.indices ? request.indices + i * k : nullptr;
        float* dist_out = request.distances ? request.distances + i * k : nullptr;
        int count;
        if (by_distance) {
          count = std::min(ball.search(grid, request.spec, q[3 * i], q[3 * i + 1], q[3 * i + 2]), k);
          detail::finish_row<0>(request.spec, SortedRow{ball.candidates(), k}, count, idx_out, dist_out);
        } else {
          const std::int32_t own = self && request.spec.exclude_self ? static_cast<std::int32_t>(i) : -1;
          CpuRow row(key.data(), d2.data(), idx.data(), k);
          count = request.spec.ball
                      ? detail::search_query(grid, request.spec, q[3 * i], q[3 * i + 1], q[3 * i + 2], own, row)
                      : knn.search(grid, q[3 * i], q[3 * i + 1], q[3 * i + 2], own, row);
          detail::finish_row<0>(request.spec, row, count, idx_out, dist_out);
        }
        if (request.counts) request.counts[i] = count;
      }
    }
  }

  void run_device_async(const SearchRequest&, StreamHandle) override {}

 private:
  detail::GridView build_grid(const SearchRequest& request) {
    const std::int64_t n = static_cast<std::int64_t>(request.points.size);
    const float* p = request.points.xyz;
    float lo[3] = {p[0], p[1], p[2]}, hi[3] = {p[0], p[1], p[2]};
    for (std::int64_t i = 1; i < n; ++i)
      for (int a = 0; a < 3; ++a) {
        lo[a] = std::min(lo[a], p[3 * i + a]);
        hi[a] = std::max(hi[a], p[3 * i + a]);
      }
    detail::GridView g{};
    g.shape = detail::make_grid_shape(lo, hi, n, request.points_per_cell, request.min_cell, detail::max_grid_cells(n));
    std::int64_t squares = histogram(g.shape, p, n);
    // The shape sizes cells by the bounding box's volume, which suits a cloud that fills it. A scan is a surface
    // with uneven density (a KITTI sweep: ~750 points in the cell an average point sits in, against the ~5
    // asked for), and every query then reads 27 such cells. On the CPU, cells get finer until the cell an
    // average point sits in holds a few times what was asked (surface-like: its count goes with the cell's
    // area). Any shape gives the same answers (grid_math.hpp), so CUDA's coarser grid still agrees bit for bit.
    const double wanted = 4.0 * request.points_per_cell;
    float per_cell = request.points_per_cell;
    for (int round = 0; round < 3; ++round) {
      // The count of the cell a random point is in: sum over cells of count^2 / n.
      const double seen = static_cast<double>(squares) / static_cast<double>(n);
      if (seen <= 2 * wanted) break;
      const double shrink = std::sqrt(wanted / seen);
      per_cell = static_cast<float>(per_cell * shrink * shrink * shrink);
      const long long cap = std::min<long long>(32 * static_cast<long long>(n) + 1, 1LL << 24);
      const detail::GridShape finer = detail::make_grid_shape(lo, hi, n, per_cell, request.min_cell, cap);
      if (!(finer.cell < 0.9f * g.shape.cell)) break;  // capped, or held at min_cell
      g.shape = finer;
      squares = histogram(g.shape, p, n);
    }
    const long long cells = g.shape.cells();
    for (long long c = 0; c < cells; ++c) begin_[c + 1] += begin_[c];
    cursor_.assign(begin_.begin(), begin_.end() - 1);
    sorted_.resize(static_cast<std::size_t>(4 * n));
    index_.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {  // stable: a cell lists its points in index order
      const std::int32_t at = cursor_[cell_[i]]++;
      std::copy(p + 3 * i, p + 3 * i + 3, sorted_.data() + 4 * static_cast<std::int64_t>(at));
      sorted_[4 * static_cast<std::int64_t>(at) + 3] = 0.f;
      index_[at] = static_cast<std::int32_t>(i);
    }
    g.begin = begin_.data();
    g.xyz = sorted_.data();
    g.index = index_.data();
    return g;
  }

  /// cell_[i] = point i's cell; begin_[c + 1] = how many points cell c holds (begin_[0] = 0). Returns the sum
  /// over cells of count^2, kept as the counts grow ((c + 1)^2 - c^2 = 2c + 1) so that no pass over the cells
  /// (up to 32 per point) is needed to get it.
  std::int64_t histogram(const detail::GridShape& shape, const float* p, std::int64_t n) {
    cell_.resize(static_cast<std::size_t>(n));
    begin_.assign(static_cast<std::size_t>(shape.cells()) + 1, 0);
    std::int64_t squares = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const int x = detail::grid_coordinate(shape, p[3 * i], 0);
      const int y = detail::grid_coordinate(shape, p[3 * i + 1], 1);
      const int z = detail::grid_coordinate(shape, p[3 * i + 2], 2);
      cell_[i] = detail::grid_cell(shape, x, y, z);
      squares += 2 * static_cast<std::int64_t>(begin_[cell_[i] + 1]++) + 1;
    }
    return squares;
  }

  std::vector<long long> cell_;
  std::vector<std::int32_t> begin_, cursor_, index_;
  std::vector<float> sorted_;
};

}  // namespace

namespace detail {
std::unique_ptr<NeighborEngine::Impl> make_cpu_neighbors(const Device& device) {
  return std::make_unique<CpuNeighbors>(device);
}
}  // namespace detail

}  // namespace s3d::points
