#pragma once
// Exact neighbour search on point clouds (kNN, ball query, three-NN interpolation weights), on the CPU and on
// CUDA with identical results. docs/PC-SAMPLE.md states the semantics; in short:
//  - Squared distances are ((dx*dx)+(dy*dy))+(dz*dz) in fp32 from direct differences (never |x|^2+|y|^2-2xy),
//    without FMA contraction, so results do not depend on how far the cloud sits from the origin beyond the
//    coordinates' own rounding. Reported distances are sqrt of that (IEEE, the same on both backends).
//  - kNN: the K points with the smallest (d^2, index), ascending; ties go to the smaller index.
//  - Ball query (pointnet2): the points with d^2 < r^2 (and, when min_r > 0, d^2 >= min_r^2 or d = 0, as
//    mmcv); by default the first K of them in index order, or (order = distance) the K nearest with ties to
//    the smaller index.
//  - Missing neighbours (fewer than K) are index -1 and distance +inf, or with pad = first the first hit
//    repeated (an empty ball stays -1 either way).
// Both backends sort the points into a uniform grid and visit cells until no unvisited point can enter the
// answer, so the work is proportional to the neighbourhood, not to N.
//
// This header needs no CUDA.
#include <cstdint>
#include <memory>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/core/views.hpp"

namespace s3d::points {

/// What fills the slots of a query that has fewer than K neighbours.
enum class NeighborPad {
  kMinusOne,  ///< index -1, distance +inf (default)
  kFirst,     ///< the first neighbour repeated (pointnet2 ball query); a query with none keeps -1
};

/// kNN parameters.
struct KnnParams {
  int k = 16;                 ///< neighbours per query, in [1, 1024]
  bool exclude_self = false;  ///< queries are the cloud itself: query i never returns point i
  /// K larger than the points available (N, or N - 1 with exclude_self) is an error unless padding is allowed.
  bool allow_fewer = false;
  NeighborPad pad = NeighborPad::kMinusOne;
  /// @throws InvalidArgument naming the field.
  void validate() const;
};

/// Which K of the points inside the ball a ball query returns.
enum class BallOrder {
  kIndex,     ///< the first K in index order (pointnet2, PyTorch3D, mmcv)
  kDistance,  ///< the K nearest, ties to the smaller index
};

/// Ball-query parameters.
struct BallQueryParams {
  float radius = 0.1f;      ///< r > 0, finite: a point is inside iff d^2 < r^2
  float min_radius = 0.0f;  ///< mmcv: also d^2 >= min_r^2 or d = 0 (0 = off); 0 <= min_r < r
  int k = 32;               ///< neighbours per query, in [1, 1024]
  BallOrder order = BallOrder::kIndex;
  NeighborPad pad = NeighborPad::kMinusOne;
  /// @throws InvalidArgument naming the field.
  void validate() const;
};

/// Neighbours of Q queries, K slots each, row-major [Q, K].
struct Neighbors {
  std::int64_t queries = 0;
  int k = 0;
  std::vector<std::int32_t> indices;  ///< point indices, -1 = none
  std::vector<float> distances;       ///< Euclidean distances, +inf where the index is -1
  std::vector<std::int32_t> counts;   ///< neighbours found per query (before padding), <= K
};

/// Three-NN inverse-distance interpolation weights (pointnet2 `three_nn` + `three_interpolate`).
struct Interpolation {
  std::int64_t queries = 0;
  std::vector<std::int32_t> indices;  ///< [Q, 3] nearest sparse points, ascending (d, index); -1 when N < 3
  std::vector<float> weights;         ///< [Q, 3] w_j = (1 / (d_j + 1e-8)) / sum; 0 for a missing neighbour
};

/// A neighbour-search engine bound to one device; keeps its grid and scratch buffers across calls.
/// Not thread-safe. Host-memory entry points are synchronous.
class NeighborEngine {
 public:
  /// @throws DeviceUnavailable when `device` is CUDA and none is usable.
  explicit NeighborEngine(const Device& device);
  ~NeighborEngine();
  NeighborEngine(NeighborEngine&&) noexcept;
  NeighborEngine& operator=(NeighborEngine&&) noexcept;

  /// kNN of each query among `points` (host memory). `queries` empty (size 0, null) = the points themselves.
  /// @throws InvalidArgument (params, K > N without allow_fewer, empty points), CudaError, OutOfMemory.
  Neighbors knn(PointsView<const float> points, PointsView<const float> queries, const KnnParams& params);
  /// Ball query of each query among `points` (host memory); empty `queries` = the points themselves.
  Neighbors ball_query(PointsView<const float> points, PointsView<const float> queries, const BallQueryParams& params);
  /// For each dense point, its 3 nearest `sparse` points and their inverse-distance weights (host memory).
  Interpolation three_nn(PointsView<const float> sparse, PointsView<const float> dense);

  /// CUDA engines only: device-memory inputs and outputs ([Q, K] indices and distances, [Q] counts; any
  /// output may be null), ordered on `stream`, no host synchronisation. @throws InvalidArgument on a CPU engine.
  void knn_device_async(PointsView<const float> points, PointsView<const float> queries, const KnnParams& params,
                        std::int32_t* indices, float* distances, std::int32_t* counts, StreamHandle stream);
  void ball_query_device_async(PointsView<const float> points, PointsView<const float> queries,
                               const BallQueryParams& params, std::int32_t* indices, float* distances,
                               std::int32_t* counts, StreamHandle stream);

  const Device& device() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Interpolates a per-point attribute of the sparse cloud onto the dense one: out[q, c] = sum_j w[q, j] *
/// values[idx[q, j], c] for `channels` values per sparse point (host memory, in double for the sum).
std::vector<double> interpolate(const Interpolation& weights, const double* values, int channels);

}  // namespace s3d::points
