#pragma once
// Internal: the backend side of RulebookEngine. rulebook.cpp validates the spec and the coordinates, derives
// the output grid and dispatches; rulebook_cpu.cpp and rulebook_cuda.cu build the pairs. No CUDA types here.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rulebook_math.hpp"
#include "s3d/core/device.hpp"
#include "s3d/points/rulebook.hpp"

namespace s3d::points {

class RulebookEngine::Impl {
 public:
  explicit Impl(const Device& device) : device_(device) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Coordinates already checked against the grid and batch; `geometry` complete. Fills `out.out.coords`, the
  /// counts, offsets and pairs. @throws DataError naming a duplicate input coordinate (found_duplicate's row).
  virtual void build(const SparseCoords& in, const detail::ConvGeometry& geometry, bool subm, Rulebook* out) = 0;

  /// Device-memory coordinates (CUDA only; their range is checked here, on the device).
  /// @throws InvalidArgument on the CPU backend.
  virtual DeviceRulebook build_device(const std::int32_t* coords, std::int64_t count, const SparseCoords& shape_only,
                                      const detail::ConvGeometry& geometry, bool subm) = 0;

  /// The hash table on its own (for its tests): inserts `keys` (row = position) into a table of `capacity`
  /// slots (a power of two), then returns the row of each of `queries` (-1 = absent). 64-bit slots when a key
  /// needs them. @throws DataError when a key repeats or the table is full.
  virtual std::vector<std::int32_t> probe_table(const std::vector<std::uint64_t>& keys, std::uint64_t capacity,
                                                const std::vector<std::uint64_t>& queries) = 0;

  Device device_;
};

namespace detail {
std::unique_ptr<RulebookEngine::Impl> make_cpu_rulebook(const Device& device);
/// Defined only when CUDA is built. @throws DeviceUnavailable, CudaError.
std::unique_ptr<RulebookEngine::Impl> make_cuda_rulebook(const Device& device);

/// Checks every row of `in` against its shape and batch. @throws DataError naming the first bad row.
void check_rows(const SparseCoords& in);

/// The first row of `in` whose coordinate repeats an earlier row's (-1 when none), and the error naming it.
std::int64_t first_duplicate_row(const SparseCoords& in);
[[noreturn]] void throw_duplicate(const SparseCoords& in, std::int64_t row);
[[noreturn]] void throw_table_full(std::uint64_t capacity);

/// The hash table of `device`'s backend on its own (Impl::probe_table), for the table's tests.
std::vector<std::int32_t> probe_voxel_table(const Device& device, const std::vector<std::uint64_t>& keys,
                                            std::uint64_t capacity, const std::vector<std::uint64_t>& queries);

/// Open-addressing slots for `n` keys: the power of two >= 2n (load factor <= 0.5), at least 64.
inline std::uint64_t hash_capacity(std::int64_t n) {
  std::uint64_t c = 64;
  while (c < 2 * static_cast<std::uint64_t>(n)) c <<= 1;
  return c;
}
}  // namespace detail

}  // namespace s3d::points
