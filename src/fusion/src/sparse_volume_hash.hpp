#pragma once
// Internal: the sparse TSDF volume's storage as both backends see it (S3D_HOST_DEVICE, no CUDA types).
// - Blocks of 8^3 voxels; block (a, b, c) holds the world-lattice voxels 8a..8a+7 (x), 8b.. (y), 8c.. (z);
//   inside a block voxel (x, y, z) is at x + 8 (y + 8 z). Voxel (i, j, k) is centred at ((i, j, k) + 0.5) v,
//   the dense volume's convention with origin 0 (tsdf_math.hpp: VolumeGrid::centre).
// - A block's key packs its coordinates, each biased by 2^20 into 21 bits, z highest: unsigned key order is
//   (z, y, x) order, the order extraction and download use. kEmptyKey (all ones) is no block's key.
// - The hash: open addressing, linear probing, a power-of-two table of at least twice the pool's blocks (load
//   <= 1/2, so a probe always meets an empty entry); keys[h] -> slots[h], the block's index in the pool.
//   Blocks are never removed (no eviction), so there are no tombstones. Two more tables of the same layout
//   (keys only) hold the coarse cells of 4^3 and 16^3 blocks that have an allocated block (coarse_key).
#include <cstdint>

#include "fusion_math.hpp"
#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

constexpr int kBlockSide = 8;
constexpr int kBlockVoxels = 512;
constexpr int kBlockCoordLimit = 1 << 20;  ///< block coordinates lie in [-limit, limit)
constexpr int kVoxelCoordLimit = kBlockCoordLimit * kBlockSide;
constexpr unsigned long long kEmptyKey = ~0ULL;

struct BlockCoord {
  int x, y, z;
};
S3D_HOST_DEVICE S3D_FORCEINLINE bool operator==(BlockCoord a, BlockCoord b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

S3D_HOST_DEVICE S3D_FORCEINLINE bool block_in_range(int x, int y, int z) {
  return x >= -kBlockCoordLimit && x < kBlockCoordLimit && y >= -kBlockCoordLimit && y < kBlockCoordLimit &&
         z >= -kBlockCoordLimit && z < kBlockCoordLimit;
}
/// The key of block (x, y, z), which must be block_in_range.
S3D_HOST_DEVICE S3D_FORCEINLINE unsigned long long pack_block(int x, int y, int z) {
  return static_cast<unsigned long long>(x + kBlockCoordLimit) |
         (static_cast<unsigned long long>(y + kBlockCoordLimit) << 21) |
         (static_cast<unsigned long long>(z + kBlockCoordLimit) << 42);
}
S3D_HOST_DEVICE S3D_FORCEINLINE BlockCoord unpack_block(unsigned long long key) {
  return {static_cast<int>(key & 0x1FFFFFULL) - kBlockCoordLimit,
          static_cast<int>((key >> 21) & 0x1FFFFFULL) - kBlockCoordLimit,
          static_cast<int>((key >> 42) & 0x1FFFFFULL) - kBlockCoordLimit};
}
/// The first entry probed for `key` in a table of mask + 1 (a power of two, 2^b) entries: Fibonacci hashing of
/// the whole key (Knuth, TAOCP vol. 3, 6.4): the top b bits of key * 2^64 / phi, which every bit of the key
/// reaches. Each block gets its own random entry. Keeping the blocks of a 4^3 cell in one run of 64 entries, for
/// cache locality, measured slower: the runs of the cells near the surface fill up, and a look-up of a block
/// that is not allocated (most of a ray's) walks a long occupied stretch to its empty entry (ray cast 1.12
/// against 0.47 ms a frame, redkitchen, colour, H200).
/// b = 32 - the leading zeros of mask: one instruction on both sides (a population count is a library call on
/// x86-64's baseline).
S3D_HOST_DEVICE S3D_FORCEINLINE unsigned int hash_entry(unsigned long long key, unsigned int mask) {
  if (mask == 0) return 0;
#ifdef __CUDA_ARCH__
  const int bits = 32 - __clz(mask);
#else
  const int bits = 32 - __builtin_clz(mask);
#endif
  return static_cast<unsigned int>((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/// The hash table as kernels read it (trivially copyable).
struct BlockHash {
  const unsigned long long* keys;
  const int* slots;
  unsigned int mask;  ///< entries - 1
  /// The pool slot of block `key`, -1 when it is not allocated.
  S3D_HOST_DEVICE S3D_FORCEINLINE int find(unsigned long long key) const {
    for (unsigned int h = hash_entry(key, mask);; h = (h + 1) & mask) {
      const unsigned long long k = keys[h];
      if (k == key) return slots[h];
      if (k == kEmptyKey) return -1;
    }
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE int find(int x, int y, int z) const {
    return block_in_range(x, y, z) ? find(pack_block(x, y, z)) : -1;
  }
  /// Whether `key` is in the table (the only query of a key set, whose `slots` is null).
  S3D_HOST_DEVICE S3D_FORCEINLINE bool contains(unsigned long long key) const {
    for (unsigned int h = hash_entry(key, mask);; h = (h + 1) & mask) {
      const unsigned long long k = keys[h];
      if (k == key) return true;
      if (k == kEmptyKey) return false;
    }
  }
};

/// Coarse occupancy for the ray cast's skipping: level l's cells are (4^(l+1))^3 blocks (block coordinates shifted
/// right by coarse_shift(l)), and a key set per level holds every cell with an allocated block. Same table layout
/// and size as the block hash, keys only.
constexpr int kCoarseLevels = 2;
S3D_HOST_DEVICE S3D_FORCEINLINE int coarse_shift(int level) { return 2 + 2 * level; }
S3D_HOST_DEVICE S3D_FORCEINLINE unsigned long long coarse_key(BlockCoord b, int level) {
  const int s = coarse_shift(level);
  return pack_block(b.x >> s, b.y >> s, b.z >> s);
}

/// Index of voxel (x, y, z) (each 0..7) inside its block.
S3D_HOST_DEVICE S3D_FORCEINLINE int local_index(int x, int y, int z) { return x + kBlockSide * (y + kBlockSide * z); }

/// What every sparse kernel needs besides its own arguments.
struct SparseGrid {
  float voxel;       ///< edge, metres
  float block;       ///< 8 * voxel, metres
  float truncation;  ///< metres
  int max_weight;
  /// The dense grid whose voxel centres and per-voxel math the sparse volume reuses: origin 0, voxel `voxel`
  /// on every axis (its resolution is not used).
  VolumeGrid lattice;
};

inline SparseGrid make_sparse_grid(const VolumeParams& p) {
  SparseGrid g{};
  g.voxel = p.sparse_voxel_size;
  g.block = 8.0f * p.sparse_voxel_size;
  g.truncation = p.truncation;
  g.max_weight = p.max_weight;
  g.lattice.nx = g.lattice.ny = g.lattice.nz = kBlockSide;
  g.lattice.origin = {0.0f, 0.0f, 0.0f};
  g.lattice.voxel = {g.voxel, g.voxel, g.voxel};
  g.lattice.size = {g.block, g.block, g.block};
  g.lattice.truncation = p.truncation;
  g.lattice.truncation_growth = p.truncation_growth;
  g.lattice.truncation_cap = p.max_truncation();
  g.lattice.max_weight = p.max_weight;
  return g;
}

/// Block b's box as a camera sees it (world_to_camera `m`, pinhole fx, fy, cx, cy), in double precision, the same
/// on both backends: the least camera depth of its corners, whether every corner lies behind the camera (depth
/// <= -block), whether every corner lies beyond `near`, and the pixel bounds of the corners beyond `near` (the
/// box's image is the convex hull of its corners').
struct BlockImage {
  double z_lo = 1e300, u_lo = 1e300, u_hi = -1e300, v_lo = 1e300, v_hi = -1e300;
  bool all_behind = true, all_far = true;
};
S3D_HOST_DEVICE S3D_FORCEINLINE BlockImage block_image(const Rigid& m, double bs, BlockCoord b, double near, double fx,
                                                       double fy, double cx, double cy) {
  BlockImage im;
  for (int c = 0; c < 8; ++c) {
    const double px = (b.x + (c & 1)) * bs, py = (b.y + ((c >> 1) & 1)) * bs, pz = (b.z + (c >> 2)) * bs;
    const double x = (static_cast<double>(m.r[0]) * px + static_cast<double>(m.r[1]) * py) +
                     (static_cast<double>(m.r[2]) * pz + m.t[0]);
    const double y = (static_cast<double>(m.r[3]) * px + static_cast<double>(m.r[4]) * py) +
                     (static_cast<double>(m.r[5]) * pz + m.t[1]);
    const double z = (static_cast<double>(m.r[6]) * px + static_cast<double>(m.r[7]) * py) +
                     (static_cast<double>(m.r[8]) * pz + m.t[2]);
    im.z_lo = z < im.z_lo ? z : im.z_lo;
    if (z > -bs) im.all_behind = false;
    if (!(z > near)) {
      im.all_far = false;
      continue;
    }
    const double u = fx * x / z + cx, v = fy * y / z + cy;
    im.u_lo = u < im.u_lo ? u : im.u_lo;
    im.u_hi = u > im.u_hi ? u : im.u_hi;
    im.v_lo = v < im.v_lo ? v : im.v_lo;
    im.v_hi = v > im.v_hi ? v : im.v_hi;
  }
  return im;
}

/// The voxels as the ray cast reads them: any world-lattice voxel, through the hash; a voxel of a block that
/// is not allocated reads as tsdf 0, weight 0 (the dense volume's unobserved voxel).
struct SparseVoxels {
  BlockHash hash;
  const Voxel* voxels;              ///< kBlockVoxels per pool slot
  BlockHash coarse[kCoarseLevels];  ///< key sets (coarse_key)

  S3D_HOST_DEVICE S3D_FORCEINLINE int block_slot(int i, int j, int k) const {
    return hash.find(i >> 3, j >> 3, k >> 3);
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE Voxel in_slot(int slot, int i, int j, int k) const {
    return slot < 0 ? Voxel{0, 0}
                    : voxels[static_cast<long long>(slot) * kBlockVoxels + local_index(i & 7, j & 7, k & 7)];
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE Voxel at(int i, int j, int k) const { return in_slot(block_slot(i, j, k), i, j, k); }
};

/// A block and its 26 neighbours' pool slots (-1: not allocated), for the per-block extraction passes, which
/// read voxels up to 8 outside the block on every side. Local voxel coordinates are relative to the block's
/// first voxel, in [-8, 16).
struct BlockNeighbourhood {
  int slot[27];
  BlockCoord block;

  /// Neighbour n (0..26, x fastest, offsets -1..1) of block b; a CUDA block loads the 27 with 27 threads.
  S3D_HOST_DEVICE S3D_FORCEINLINE void load_one(const BlockHash& hash, BlockCoord b, int n) {
    slot[n] = hash.find(b.x + n % 3 - 1, b.y + (n / 3) % 3 - 1, b.z + n / 9 - 1);
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE void load(const BlockHash& hash, BlockCoord b) {
    block = b;
    for (int n = 0; n < 27; ++n) load_one(hash, b, n);
  }
  /// The slot holding local voxel (x, y, z).
  S3D_HOST_DEVICE S3D_FORCEINLINE int slot_of(int x, int y, int z) const {
    return slot[((x >> 3) + 1) + 3 * (((y >> 3) + 1) + 3 * ((z >> 3) + 1))];
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE long long index(int x, int y, int z) const {
    const int s = slot_of(x, y, z);
    return s < 0 ? -1 : static_cast<long long>(s) * kBlockVoxels + local_index(x & 7, y & 7, z & 7);
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE Voxel at(const Voxel* voxels, int x, int y, int z) const {
    const long long v = index(x, y, z);
    return v < 0 ? Voxel{0, 0} : voxels[v];
  }
  /// World-lattice coordinates of local voxel (x, y, z).
  S3D_HOST_DEVICE S3D_FORCEINLINE int gi(int x) const { return block.x * kBlockSide + x; }
  S3D_HOST_DEVICE S3D_FORCEINLINE int gj(int y) const { return block.y * kBlockSide + y; }
  S3D_HOST_DEVICE S3D_FORCEINLINE int gk(int z) const { return block.z * kBlockSide + z; }
};

}  // namespace s3d::fusion::detail
