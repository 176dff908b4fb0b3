#pragma once
// How much memory one pair may need before it is refused as too large for this machine: a pair
// that can never fit is a data error of that pair (exit 1, the batch goes on), unlike an allocation that
// fails because other processes hold the memory now (out of memory: exit 75, retry elsewhere).
#include <cstddef>
#include <string>

#include "s3d/core/device.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::sgm_depth {

/// Parses a --max-memory value: a positive number of bytes with an optional suffix K, M, G or T (powers of
/// 1024; `KB`, `KiB`... are the same). @throws InvalidArgument naming the flag.
std::size_t parse_memory_size(const std::string& text);

/// `1.5 GiB`, `40.0 MiB`, `512 B`.
std::string memory_text(std::size_t bytes);

/// The limits one pair's matching is held to.
class MemoryBudget {
 public:
  /// `max_memory` (bytes; 0 = none): the limit of the memory that matching uses most (host RAM on the CPU,
  /// GPU memory on a GPU); without it, that memory's total: physical RAM (sysconf, or a smaller cgroup
  /// limit) and, on a GPU, cudaMemGetInfo's total. Pinned host staging on a GPU is always held to the RAM.
  MemoryBudget(const Device& device, std::size_t max_memory);

  /// @throws DataError `NAME: WxH at -D D needs X ... more than Y (where the limit comes from)` when
  ///         matching a `width` x `height` pair with `params` (valid for that size) can never fit.
  void check(const std::string& name, const stereo::SgmParams& params, int width, int height, int depth) const;

 private:
  Device device_;
  std::size_t host_limit_ = 0, device_limit_ = 0;
  std::string host_source_, device_source_;
};

}  // namespace s3d::sgm_depth
