#pragma once
// Sparse-convolution rulebooks (spconv's indice pairs), on the CPU and on CUDA with the same bytes.
// docs/PC-SAMPLE.md states the semantics; in short:
//  - Coordinates are int32 (batch, z, y, x) in a grid of shape (Z, Y, X); the linear index is
//    ((b * Z + z) * Y + y) * X + x, 64-bit when the batch x grid volume exceeds INT32_MAX.
//  - Kernel offset k = (kz * KY + ky) * KX + kx; output o and input i meet at offset k when, per axis,
//    i = o * stride - padding + k_axis * dilation (spconv's convention).
//  - Submanifold (subm): outputs are the inputs, in input order (odd kernels, stride 1, padding (K / 2) * d).
//    Regular: outputs are every cell some input reaches, inside the output shape
//    floor((in + 2p - d (k - 1) - 1) / s) + 1, sorted by linear index. Inverse: the forward rulebook with
//    inputs and outputs swapped; outputs are the forward's inputs in their order.
//  - Pairs: offset-major; within an offset sorted by output, then input index. No atomics decide an order:
//    the same bytes on every run and on both backends.
//
// This header needs no CUDA.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/points/voxels.hpp"

namespace s3d::points {

/// One sparse convolution's geometry, per axis (z, y, x).
struct ConvSpec {
  std::array<int, 3> kernel{3, 3, 3};
  std::array<int, 3> stride{1, 1, 1};
  std::array<int, 3> padding{0, 0, 0};
  std::array<int, 3> dilation{1, 1, 1};
  bool subm = false;  ///< submanifold: stride 1, odd kernel, padding (k / 2) * dilation (set by validate's caller)
  /// @throws InvalidArgument naming the field (kernel in [1, 15] with volume <= 1024, stride and dilation >= 1,
  /// padding >= 0; subm with an even kernel or a stride other than 1).
  void validate() const;
  int volume() const { return kernel[0] * kernel[1] * kernel[2]; }
};

/// Active voxels: M rows of (batch, z, y, x) in a grid of `shape` (z, y, x).
struct SparseCoords {
  std::array<std::int32_t, 3> shape{};
  int batch_size = 1;                ///< batch ids lie in [0, batch_size)
  std::vector<std::int32_t> coords;  ///< [M, 4]
  std::int64_t count() const { return static_cast<std::int64_t>(coords.size() / 4); }
};

/// Coordinates given as rows (batch, z, y, x), say from a file: every batch id checked (>= 0), and the batch
/// size taken from the largest id when `batch_size` is 0. @throws DataError for no rows ("no voxel coordinates
/// (shape [0, 4])"), "row R: negative batch id B", a largest id of 2^31 - 1 (no batch size holds it).
SparseCoords coords_from_rows(std::vector<std::int32_t> rows, const std::array<std::int32_t, 3>& shape,
                              int batch_size = 0);
/// One cloud's voxels (VoxelEngine's answer) as coordinates of one batch in the voxel grid's shape.
/// @throws DataError when an axis has more than 2^31 - 1 cells.
SparseCoords coords_of(const Voxels& voxels);

/// The rulebook of one sparse convolution.
struct Rulebook {
  int kernel_volume = 0;
  std::int64_t inputs = 0;
  SparseCoords out;                     ///< output coordinates and shape
  std::vector<std::int32_t> counts;     ///< [K] pairs per offset
  std::vector<std::int64_t> offsets;    ///< [K + 1] start of each offset's pairs (CSR)
  std::vector<std::int32_t> in_index;   ///< [P] input row of each pair
  std::vector<std::int32_t> out_index;  ///< [P] output row of each pair
  std::int64_t pairs() const { return static_cast<std::int64_t>(in_index.size()); }
  /// spconv's `indice_pairs` [2, K, n_max] (row 0 inputs, row 1 outputs), -1 padded; n_max >= max(counts)
  /// (spconv uses the layer's input count). @throws InvalidArgument when n_max < max(counts).
  std::vector<std::int32_t> spconv_pairs(std::int64_t n_max) const;
};

/// A rulebook left in a CUDA engine's device buffers (valid until the engine's next call).
struct DeviceRulebook {
  int kernel_volume = 0;
  std::int64_t inputs = 0;
  std::int64_t outputs = 0;
  std::array<std::int32_t, 3> out_shape{};
  const std::int32_t* out_coords = nullptr;  ///< [outputs, 4] device memory (subm: the input pointer)
  const std::int32_t* in_index = nullptr;    ///< [P] device memory
  const std::int32_t* out_index = nullptr;   ///< [P] device memory
  std::vector<std::int64_t> offsets;         ///< [K + 1] host copy
};

/// Builds rulebooks on one device; keeps its hash table and scratch buffers across calls. Not thread-safe.
class RulebookEngine {
 public:
  /// @throws DeviceUnavailable when `device` is CUDA and none is usable.
  explicit RulebookEngine(const Device& device);
  ~RulebookEngine();
  RulebookEngine(RulebookEngine&&) noexcept;
  RulebookEngine& operator=(RulebookEngine&&) noexcept;

  /// The rulebook of `spec` on `in` (host memory). Duplicate input coordinates are an error.
  /// @throws InvalidArgument (spec), DataError (a coordinate outside the shape or batch, a duplicate, a grid
  /// whose cell count overflows 63 bits, no output left), CudaError, OutOfMemory.
  Rulebook build(const SparseCoords& in, const ConvSpec& spec);
  /// CUDA engines only: `count` rows of (batch, z, y, x) in device memory, in a grid of `shape` with
  /// `batch_size` batches. Synchronous (the pair count sizes the outputs). The same checks as build.
  /// @throws InvalidArgument on a CPU engine.
  DeviceRulebook build_device(const std::int32_t* coords, std::int64_t count, std::array<std::int32_t, 3> shape,
                              int batch_size, const ConvSpec& spec);
  /// The transposed convolution of a stored forward rulebook, whose inputs were `forward_in`.
  Rulebook inverse(const Rulebook& forward, const SparseCoords& forward_in);

  const Device& device() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// One layer of a network's chain of rulebooks: a convolution, or the transposed convolution of an earlier one.
struct RulebookLayer {
  std::string name;        ///< names the layer (inverse_of, messages); may be empty for a chain of one
  ConvSpec spec;           ///< subm: padding set to (k / 2) * d
  bool inverse = false;    ///< the transposed convolution of `spec`'s forward rulebook on the layer's input
  std::string inverse_of;  ///< or: the transposed convolution of this earlier layer's rulebook
};

/// A layer's rulebook in a chain.
struct LayerRulebook {
  std::string name;
  ConvSpec spec;         ///< an inverse_of layer: its forward layer's
  bool inverse = false;  ///< a transposed convolution (inverse or inverse_of)
  Rulebook rb;
  double milliseconds = 0.0;  ///< steady clock around build (and inverse)
};

/// The rulebooks of `layers` in order on `engine`, each layer's input the previous layer's output (`coords` for
/// the first). An inverse_of layer must name an earlier layer whose output reaches it unchanged (through
/// submanifold layers only). @throws DataError, prefixed "layer NAME: " for a named layer, for what the data
/// causes (coordinates outside the shape, duplicates, a grid that overflows, an inverse_of whose forward output
/// does not reach it); InvalidArgument for an inverse_of naming no earlier layer.
std::vector<LayerRulebook> build_chain(RulebookEngine& engine, const SparseCoords& coords,
                                       const std::vector<RulebookLayer>& layers);

}  // namespace s3d::points
