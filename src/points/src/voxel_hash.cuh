#pragma once
// Internal: the GPU hash table of voxel keys (linearised coordinates) -> rows. Open addressing with linear
// probing over a power-of-two table of >= 2x the keys (load factor <= 0.5), Murmur3's finaliser as the hash,
// the key type's maximum as the empty slot, atomicCAS inserts. Keys are 32-bit when every linear index
// (and the empty marker) fits, 64-bit otherwise. A probe sequence never runs longer than the table: a full
// table sets a flag instead of spinning.
#include <cuda_runtime.h>

#include <cstdint>

#include "rulebook_math.hpp"

namespace s3d::points::detail {

/// Insert outcomes a kernel reports through `status` (bit flags).
enum : unsigned { kHashDuplicate = 1u, kHashFull = 2u, kCoordOutside = 4u };

template <typename Key>
struct VoxelHashView {
  Key* keys;
  std::int32_t* rows;
  std::uint64_t mask;  // capacity - 1

  static constexpr Key kEmpty = static_cast<Key>(~Key{0});

  __device__ __forceinline__ std::uint64_t home(Key key) const { return mix_key(key) & mask; }

  /// Inserts (key, row); sets kHashDuplicate when the key is there already, kHashFull when no slot is left.
  __device__ void insert(Key key, std::int32_t row, unsigned* status) const {
    std::uint64_t s = home(key);
    for (std::uint64_t probes = 0; probes <= mask; ++probes, s = (s + 1) & mask) {
      const Key prev = atomicCAS(keys + s, kEmpty, key);
      if (prev == kEmpty) {
        rows[s] = row;
        return;
      }
      if (prev == key) {
        atomicOr(status, kHashDuplicate);
        return;
      }
    }
    atomicOr(status, kHashFull);
  }

  /// Inserts `key` alone (a key set; `rows` unused); true for the one call that added it. Sets kHashFull when
  /// no slot is left.
  __device__ bool insert_new(Key key, unsigned* status) const {
    std::uint64_t s = home(key);
    for (std::uint64_t probes = 0; probes <= mask; ++probes, s = (s + 1) & mask) {
      const Key prev = atomicCAS(keys + s, kEmpty, key);
      if (prev == kEmpty) return true;
      if (prev == key) return false;
    }
    atomicOr(status, kHashFull);
    return false;
  }

  /// Inserts `key` alone and returns its slot, whether this call or another added it; -1 (and kHashFull) when
  /// no slot is left. The slot indexes per-voxel arrays laid out beside the table.
  __device__ std::int64_t insert_slot(Key key, unsigned* status) const {
    std::uint64_t s = home(key);
    for (std::uint64_t probes = 0; probes <= mask; ++probes, s = (s + 1) & mask) {
      const Key prev = atomicCAS(keys + s, kEmpty, key);
      if (prev == kEmpty || prev == key) return static_cast<std::int64_t>(s);
    }
    atomicOr(status, kHashFull);
    return -1;
  }

  /// The row of `key`, -1 when absent. Reads happen in a later kernel than the inserts.
  __device__ __forceinline__ std::int32_t find(Key key) const {
    std::uint64_t s = home(key);
    for (std::uint64_t probes = 0; probes <= mask; ++probes, s = (s + 1) & mask) {
      const Key k = keys[s];
      if (k == key) return rows[s];
      if (k == kEmpty) return -1;
    }
    return -1;
  }
};

}  // namespace s3d::points::detail
