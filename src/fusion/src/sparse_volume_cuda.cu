// The sparse TSDF volume, CUDA backend. The per-pixel, per-block and per-voxel math is shared with the CPU oracle
// (sparse_volume_integrate.hpp, sparse_volume_raycast.hpp, sparse_volume_extract.hpp), and the allocation makes
// the same choices in the same order, so blocks, voxels, maps, meshes and clouds are bit-identical to it.
// - integrate: one thread per pixel writes the keys of the blocks its segment crosses (kEmptyKey pads to the
//   fixed count per pixel); a hash set gathers the distinct keys, which a CUB radix sort orders (beyond 2^20
//   distinct keys, a sort of every entry + unique); a flag per key not in the hash; CUB select of the new keys
//   (still in key order); when they outnumber the free slots, a stable CUB radix sort by distance from the
//   camera's block; the first `free` of them take slots used, used + 1, ... and are inserted into the hash with
//   atomicCAS (keys unique within the batch; an entry's place in the table may differ from run to run, what
//   find() returns does not), their coarse cells into the coarse key sets; their voxels are cleared. Then one thread
//   per allocated block lists those that block_maybe_visible keeps, and one CUDA block per listed block integrates
//   its 512 voxels.
// - raycast: one thread per pool slot projects its block into the start tiles (atomicMin), then one thread per
//   pixel marches.
// Allocated at construction: the hash, the pool, the block keys. The allocation's scratch (keys per pixel,
// sort buffers) and the start tiles grow with the first frame (map) of a larger size and are reused. Every method
// synchronizes the stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <utility>
#include <vector>

#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"
#include "sparse_volume.hpp"
#include "sparse_volume_cuda.cuh"
#include "volume_common.hpp"

namespace s3d::fusion::detail {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr int kIntegrateThreads = 256;

__global__ void request_kernel(AllocateArgs a, const float* depth, long long pitch, unsigned long long* out) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = blockIdx.y * blockDim.y + threadIdx.y;
  if (u >= a.width || v >= a.height) return;
  unsigned long long* mine = out + (static_cast<long long>(v) * a.width + u) * a.max_blocks;
  const int n = segment_blocks(a, depth, pitch, u, v, mine);
  for (int s = n; s < a.max_blocks; ++s) mine[s] = kEmptyKey;
}

/// Adds the requested keys (kEmptyKey: none) to the frame's request set (open addressing, mask + 1 entries); the
/// thread that inserts a key appends it to `list` (list_capacity entries). More keys than the list holds, or a
/// full set, leave *count above list_capacity: the caller then sorts every request instead. The set's content,
/// and so the sorted list, do not depend on the order in which threads insert.
__global__ void request_set_kernel(const unsigned long long* keys, int n, unsigned long long* set, unsigned int mask,
                                   unsigned long long* list, int list_capacity, int* count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned long long key = keys[i];
  if (key == kEmptyKey) return;
  unsigned int h = hash_entry(key, mask);
  for (unsigned int probe = 0; probe <= mask; ++probe, h = (h + 1) & mask) {
    // Neighbouring pixels request the same blocks: a plain read finds most of them without an atomic.
    const unsigned long long seen = set[h];
    if (seen == key) return;
    if (seen != kEmptyKey) continue;
    const unsigned long long old = atomicCAS(&set[h], kEmptyKey, key);
    if (old == key) return;
    if (old == kEmptyKey) {
      const int at = atomicAdd(count, 1);
      if (at < list_capacity) list[at] = key;
      return;
    }
  }
  atomicMax(count, list_capacity + 1);  // the set is full
}

__global__ void new_flag_kernel(BlockHash hash, const unsigned long long* keys, const int* count,
                                unsigned char* flags) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= *count) return;
  flags[i] = keys[i] != kEmptyKey && hash.find(keys[i]) < 0;
}

__global__ void distance_kernel(const unsigned long long* keys, int n, BlockCoord camera, unsigned long long* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = block_distance2(keys[i], camera);
}

/// keys[i] (i < n, unique, not in the table) takes pool slot first + i.
__global__ void insert_kernel(unsigned long long* table_keys, int* table_slots, unsigned int mask,
                              const unsigned long long* keys, int n, long long first, unsigned long long* block_keys,
                              int* bounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned long long key = keys[i];
  const int slot = static_cast<int>(first + i);
  for (unsigned int h = hash_entry(key, mask);; h = (h + 1) & mask) {
    if (atomicCAS(&table_keys[h], kEmptyKey, key) == kEmptyKey) {
      table_slots[h] = slot;
      break;
    }
  }
  block_keys[slot] = key;
  const BlockCoord b = unpack_block(key);
  atomicMin(&bounds[0], b.x);
  atomicMin(&bounds[1], b.y);
  atomicMin(&bounds[2], b.z);
  atomicMax(&bounds[3], b.x);
  atomicMax(&bounds[4], b.y);
  atomicMax(&bounds[5], b.z);
}

/// Adds the coarse cells of keys[i] (i < n) to the level's key set (present already: nothing to do).
__global__ void coarse_insert_kernel(unsigned long long* table, unsigned int mask, const unsigned long long* keys,
                                     int n, int level) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned long long key = coarse_key(unpack_block(keys[i]), level);
  for (unsigned int h = hash_entry(key, mask);; h = (h + 1) & mask) {
    const unsigned long long old = atomicCAS(&table[h], kEmptyKey, key);
    if (old == kEmptyKey || old == key) break;
  }
}

__global__ void clear_kernel(Voxel* voxels, ColorVoxel* colors, long long first, long long n) {
  const long long i = first + static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= first + n) return;
  voxels[i] = Voxel{0, 0};
  if (colors) colors[i] = ColorVoxel{0, 0, 0, 0};
}

__global__ void bounds_reset_kernel(int* bounds) {
  if (threadIdx.x < 3) bounds[threadIdx.x] = INT_MAX;
  if (threadIdx.x >= 3 && threadIdx.x < 6) bounds[threadIdx.x] = INT_MIN;
}

/// One CUDA block per pool slot. `colors` and `rgb` are both set or both null.
/// Appends the pool slots (< n) whose blocks block_maybe_visible keeps to `list` (in no fixed order: each block's
/// integration is independent of the others').
__global__ void visible_kernel(IntegrateArgs a, SparseGrid g, const unsigned long long* block_keys, int n, int* list,
                               int* count) {
  const int slot = blockIdx.x * blockDim.x + threadIdx.x;
  if (slot >= n) return;
  if (block_maybe_visible(a, g, unpack_block(block_keys[slot]))) list[atomicAdd(count, 1)] = slot;
}

/// One CUDA block per listed pool slot: its 512 voxels.
__global__ void integrate_kernel(IntegrateArgs a, const int* list, const unsigned long long* block_keys, Voxel* voxels,
                                 ColorVoxel* colors, const float* depth, long long pitch, const std::uint8_t* rgb) {
  const long long slot = list[blockIdx.x];
  const BlockCoord b = unpack_block(block_keys[slot]);
  for (int l = threadIdx.x; l < kBlockVoxels; l += blockDim.x) {
    const long long v = slot * kBlockVoxels + l;
    integrate_voxel(a, depth, pitch, rgb, b, l, voxels + v, colors ? colors + v : nullptr);
  }
}

__global__ void fill_kernel(float* out, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

/// One thread per pool slot: block_start_tiles, then the least depth per tile. The depths are >= 0, so their
/// bit patterns order as ints do and atomicMin on them takes the least float.
__global__ void start_tiles_kernel(SparseRaycastArgs a, const unsigned long long* block_keys, long long used,
                                   float* depth) {
  const long long s = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= used) return;
  int r[4];
  float z;
  if (!block_start_tiles(a, unpack_block(block_keys[s]), r, z)) return;
  const int bits = __float_as_int(z);
  for (int ty = r[1]; ty <= r[3]; ++ty)
    for (int tx = r[0]; tx <= r[2]; ++tx) atomicMin(reinterpret_cast<int*>(depth) + ty * a.tile_cols + tx, bits);
}

__global__ void raycast_kernel(SparseVoxels vol, SparseRaycastArgs a, Vec3f* vertices, Vec3f* normals) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= a.width || y >= a.height) return;
  const long long p = static_cast<long long>(y) * a.width + x;
  sparse_raycast_pixel(vol, a, x, y, vertices[p], normals[p]);
}

unsigned int blocks_for(long long n, int threads) { return static_cast<unsigned int>((n + threads - 1) / threads); }

Stream make_stream(int device) {
  ScopedDevice scope(device);
  return Stream();
}

class CudaSparseVolume final : public SparseVolumeBackend {
 public:
  CudaSparseVolume(const Device& device, const VolumeParams& params)
      : device_(device),
        params_(params),
        grid_(make_sparse_grid(params)),
        capacity_(sparse_block_capacity(params)),
        stream_(make_stream(device.index())) {
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    const unsigned int entries = sparse_hash_entries(capacity_);
    mask_ = entries - 1;
    table_keys_.resize(entries, st);
    table_slots_.resize(entries, st);
    for (auto& level : coarse_keys_) level.resize(entries, st);
    block_keys_.resize(static_cast<std::size_t>(capacity_), st);
    visible_.resize(static_cast<std::size_t>(capacity_), st);
    voxels_.resize(static_cast<std::size_t>(capacity_ * kBlockVoxels), st);
    if (params.color) colors_.resize(voxels_.size(), st);
    bounds_dev_.resize(6, st);
    count_.resize(1, st);
    upload_sparse_mc_tables(st);
    clear();
    stream_.synchronize();
  }

  void reset() override {
    ScopedDevice scope(device_.index());
    clear();
    stream_.synchronize();
  }

  void integrate(ImageView<const float> depth_m, const std::uint8_t* rgb, const CameraIntrinsics& camera,
                 const Rigid& camera_to_world) override {
    if (depth_m.empty()) return;
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    allocate(depth_m, camera, camera_to_world);
    const bool color = rgb != nullptr && colors_.size() > 0;
    if (color) {  // through pinned memory, as the dense backend does
      const std::size_t bytes = 3 * static_cast<std::size_t>(depth_m.width) * depth_m.height;
      rgb_staging_.resize(bytes);
      std::memcpy(rgb_staging_.data(), rgb, bytes);
      rgb_.resize(bytes, st);
      rgb_.copy_from_host_async(rgb_staging_.data(), bytes, st);
    }
    if (used_ > 0) {
      // The visible blocks first (one thread each), then a CUDA block for each: most of a large map is out of view.
      const IntegrateArgs a = make_integrate_args(grid_.lattice, depth_m, camera, camera_to_world);
      S3D_CUDA_CHECK(cudaMemsetAsync(count_.data(), 0, sizeof(int), st));
      visible_kernel<<<blocks_for(used_, 256), 256, 0, st>>>(a, grid_, block_keys_.data(), static_cast<int>(used_),
                                                             visible_.data(), count_.data());
      S3D_CUDA_CHECK_LAUNCH();
      const int visible = read_count();
      if (visible > 0) {
        integrate_kernel<<<static_cast<unsigned int>(visible), kIntegrateThreads, 0, st>>>(
            a, visible_.data(), block_keys_.data(), voxels_.data(), color ? colors_.data() : nullptr, depth_m.data,
            static_cast<long long>(depth_m.pitch), color ? rgb_.data() : nullptr);
        S3D_CUDA_CHECK_LAUNCH();
      }
    }
    stream_.synchronize();
  }

  void raycast(const CameraIntrinsics& camera, const Rigid& camera_to_world, Maps out) override {
    if (out.width <= 0 || out.height <= 0) return;
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    SparseRaycastArgs a =
        make_sparse_raycast_args(grid_, params_, camera, camera_to_world, out.width, out.height, bounds_);
    if (start_tiles_) {
      const int tiles = a.tile_cols * a.tile_rows;
      start_depth_.resize(static_cast<std::size_t>(tiles), st);
      fill_kernel<<<blocks_for(tiles, 256), 256, 0, st>>>(start_depth_.data(), tiles, INFINITY);
      S3D_CUDA_CHECK_LAUNCH();
      if (used_ > 0) {
        start_tiles_kernel<<<blocks_for(used_, 128), 128, 0, st>>>(a, block_keys_.data(), used_, start_depth_.data());
        S3D_CUDA_CHECK_LAUNCH();
      }
      a.start_depth = start_depth_.data();
    }
    const dim3 block(kBlockX, kBlockY);
    const dim3 grid(blocks_for(out.width, kBlockX), blocks_for(out.height, kBlockY));
    const SparseVoxels vol{
        hash(), voxels_.data(), {{coarse_keys_[0].data(), nullptr, mask_}, {coarse_keys_[1].data(), nullptr, mask_}}};
    raycast_kernel<<<grid, block, 0, st>>>(vol, a, out.vertices, out.normals);
    S3D_CUDA_CHECK_LAUNCH();
    stream_.synchronize();
  }

  Mesh extract_mesh(int /*slab_slices*/) override {
    ScopedDevice scope(device_.index());
    return sparse_mesh_cuda(view(), stream_.get());
  }

  SurfaceCloud extract_cloud(int /*slab_slices*/) override {
    ScopedDevice scope(device_.index());
    return sparse_cloud_cuda(view(), stream_.get());
  }

  void download(std::vector<std::int16_t>& tsdf, std::vector<std::int16_t>& weight) override {
    const std::vector<Voxel> host = sorted_copy(voxels_);
    tsdf.resize(host.size());
    weight.resize(host.size());
    for (std::size_t v = 0; v < host.size(); ++v) {
      tsdf[v] = host[v].tsdf;
      weight[v] = host[v].weight;
    }
  }

  void download_colors(std::vector<std::uint8_t>& rgbw) override {
    rgbw.clear();
    if (colors_.size() == 0) return;
    const std::vector<ColorVoxel> host = sorted_copy(colors_);
    rgbw.resize(4 * host.size());
    if (!host.empty()) std::memcpy(rgbw.data(), host.data(), rgbw.size());
  }

  std::vector<BlockCoord> blocks() override {
    ScopedDevice scope(device_.index());
    std::vector<unsigned long long> keys(static_cast<std::size_t>(used_));
    if (used_ > 0) block_keys_.copy_to_host_async(keys.data(), keys.size(), stream_.get());
    stream_.synchronize();
    return sorted_blocks(std::move(keys));
  }

  SparseStats stats() override { return {capacity_, used_, refused_}; }

 private:
  BlockHash hash() const { return {table_keys_.data(), table_slots_.data(), mask_}; }

  SparseDeviceVolume view() const {
    return {grid_, hash(), voxels_.data(), colors_.size() > 0 ? colors_.data() : nullptr, block_keys_.data(), used_};
  }

  /// The pool's voxels (or colours) of the allocated blocks, blocks in key order, on the host.
  template <typename T>
  std::vector<T> sorted_copy(const DeviceBuffer<T>& pool) {
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    std::vector<T> all(static_cast<std::size_t>(used_ * kBlockVoxels));
    if (used_ > 0) pool.copy_to_host_async(all.data(), all.size(), st);
    DeviceBuffer<unsigned long long> keys;
    DeviceBuffer<int> slots;
    sort_blocks_cuda(view(), keys, slots, st);
    std::vector<int> order(static_cast<std::size_t>(used_));
    if (used_ > 0) slots.copy_to_host_async(order.data(), order.size(), st);
    stream_.synchronize();
    std::vector<T> out(all.size());
    for (std::size_t b = 0; b < order.size(); ++b)
      std::copy_n(all.begin() + static_cast<long long>(order[b]) * kBlockVoxels, kBlockVoxels,
                  out.begin() + static_cast<long long>(b) * kBlockVoxels);
    return out;
  }

  void clear() {
    cudaStream_t st = stream_.get();
    S3D_CUDA_CHECK(cudaMemsetAsync(table_keys_.data(), 0xFF, table_keys_.size() * sizeof(unsigned long long), st));
    for (auto& level : coarse_keys_)
      S3D_CUDA_CHECK(cudaMemsetAsync(level.data(), 0xFF, level.size() * sizeof(unsigned long long), st));
    bounds_reset_kernel<<<1, 32, 0, st>>>(bounds_dev_.data());
    S3D_CUDA_CHECK_LAUNCH();
    used_ = 0;
    refused_ = 0;
    bounds_ = BlockBounds{};
  }

  /// An int copied from the device (synchronizes).
  int read_count() {
    int n = 0;
    S3D_CUDA_CHECK(cudaMemcpyAsync(&n, count_.data(), sizeof n, cudaMemcpyDeviceToHost, stream_.get()));
    stream_.synchronize();
    return n;
  }

  /// Steps 1 and 2 of sparse_volume.hpp, as the CPU backend takes them.
  void allocate(ImageView<const float> depth, const CameraIntrinsics& camera, const Rigid& camera_to_world) {
    cudaStream_t st = stream_.get();
    const AllocateArgs a = make_allocate_args(grid_, depth, camera, camera_to_world);
    const long long n = static_cast<long long>(depth.width) * depth.height * a.max_blocks;
    S3D_EXPECTS(n < INT_MAX, "sparse volume: a frame of this size asks for more than 2^31 block keys");
    const int items = static_cast<int>(n);
    reserve(items);
    const dim3 block(kBlockX, kBlockY);
    request_kernel<<<dim3(blocks_for(depth.width, kBlockX), blocks_for(depth.height, kBlockY)), block, 0, st>>>(
        a, depth.data, static_cast<long long>(depth.pitch), keys_a_.data());
    S3D_CUDA_CHECK_LAUNCH();
    // The sorted distinct requests into keys_a_, their count into count_. Most of the W * H * max_blocks entries
    // are padding or repeats: a set gathers the distinct keys and only those are sorted, unless there are more
    // than the list holds; then every entry is sorted and the repeats dropped (the same result).
    S3D_CUDA_CHECK(cudaMemsetAsync(request_set_.data(), 0xff, request_set_.size() * sizeof(unsigned long long), st));
    S3D_CUDA_CHECK(cudaMemsetAsync(count_.data(), 0, sizeof(int), st));
    const int list_capacity = static_cast<int>(std::min<std::size_t>(request_list_.size(), request_set_limit_));
    request_set_kernel<<<blocks_for(items, 256), 256, 0, st>>>(keys_a_.data(), items, request_set_.data(),
                                                               static_cast<unsigned int>(request_set_.size() - 1),
                                                               request_list_.data(), list_capacity, count_.data());
    S3D_CUDA_CHECK_LAUNCH();
    int unique = read_count();
    std::size_t bytes = temp_.size();
    if (unique <= list_capacity) {
      if (unique == 0) return;
      S3D_CUDA_CHECK(
          cub::DeviceRadixSort::SortKeys(temp_.data(), bytes, request_list_.data(), keys_a_.data(), unique, 0, 64, st));
    } else {
      S3D_CUDA_CHECK(
          cub::DeviceRadixSort::SortKeys(temp_.data(), bytes, keys_a_.data(), keys_b_.data(), items, 0, 64, st));
      bytes = temp_.size();
      S3D_CUDA_CHECK(
          cub::DeviceSelect::Unique(temp_.data(), bytes, keys_b_.data(), keys_a_.data(), count_.data(), items, st));
      unique = read_count();
    }
    if (unique == 0) return;
    new_flag_kernel<<<blocks_for(unique, 256), 256, 0, st>>>(hash(), keys_a_.data(), count_.data(), flags_.data());
    S3D_CUDA_CHECK_LAUNCH();
    bytes = temp_.size();
    S3D_CUDA_CHECK(cub::DeviceSelect::Flagged(temp_.data(), bytes, keys_a_.data(), flags_.data(), keys_b_.data(),
                                              count_.data(), unique, st));
    const int fresh = read_count();
    const long long free = capacity_ - used_;
    const long long take = fresh < free ? fresh : free;
    const unsigned long long* chosen = keys_b_.data();
    if (fresh > free) {  // nearest first, ties in key order (the radix sort is stable)
      distance_kernel<<<blocks_for(fresh, 256), 256, 0, st>>>(keys_b_.data(), fresh,
                                                              camera_block(grid_, camera_to_world), dist_a_.data());
      S3D_CUDA_CHECK_LAUNCH();
      bytes = temp_.size();
      S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp_.data(), bytes, dist_a_.data(), dist_b_.data(),
                                                     keys_b_.data(), keys_a_.data(), fresh, 0, 64, st));
      chosen = keys_a_.data();
      refused_ += fresh - free;
    }
    if (take > 0) {
      clear_kernel<<<blocks_for(take * kBlockVoxels, 256), 256, 0, st>>>(
          voxels_.data(), colors_.size() > 0 ? colors_.data() : nullptr, used_ * kBlockVoxels, take * kBlockVoxels);
      S3D_CUDA_CHECK_LAUNCH();
      insert_kernel<<<blocks_for(take, 256), 256, 0, st>>>(table_keys_.data(), table_slots_.data(), mask_, chosen,
                                                           static_cast<int>(take), used_, block_keys_.data(),
                                                           bounds_dev_.data());
      S3D_CUDA_CHECK_LAUNCH();
      for (int level = 0; level < kCoarseLevels; ++level) {
        coarse_insert_kernel<<<blocks_for(take, 256), 256, 0, st>>>(coarse_keys_[level].data(), mask_, chosen,
                                                                    static_cast<int>(take), level);
        S3D_CUDA_CHECK_LAUNCH();
      }
      int b[6];
      S3D_CUDA_CHECK(cudaMemcpyAsync(b, bounds_dev_.data(), sizeof b, cudaMemcpyDeviceToHost, st));
      stream_.synchronize();
      for (int axis = 0; axis < 3; ++axis) {
        bounds_.lo[axis] = b[axis];
        bounds_.hi[axis] = b[3 + axis];
      }
      used_ += take;
    }
  }

  /// Scratch for `items` block keys a frame (grows only).
  void reserve(int items) {
    cudaStream_t st = stream_.get();
    const std::size_t n = static_cast<std::size_t>(items);
    if (keys_a_.size() >= n) return;
    keys_a_.resize(n, st);
    keys_b_.resize(n, st);
    dist_a_.resize(n, st);
    dist_b_.resize(n, st);
    flags_.resize(n, st);
    // The request set: distinct keys up to 2^20 a frame (8 MiB of list), the set twice that in entries.
    const std::size_t list = std::min(n, std::size_t{1} << 20);
    std::size_t entries = 1024;
    while (entries < 2 * list) entries *= 2;
    request_list_.resize(list, st);
    request_set_.resize(entries, st);
    std::size_t need = 0, bytes = 0;
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys_a_.data(), keys_b_.data(), items, 0, 64, st));
    need = bytes > need ? bytes : need;
    S3D_CUDA_CHECK(cub::DeviceSelect::Unique(nullptr, bytes, keys_b_.data(), keys_a_.data(), count_.data(), items, st));
    need = bytes > need ? bytes : need;
    S3D_CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, keys_a_.data(), flags_.data(), keys_b_.data(),
                                              count_.data(), items, st));
    need = bytes > need ? bytes : need;
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, dist_a_.data(), dist_b_.data(), keys_b_.data(),
                                                   keys_a_.data(), items, 0, 64, st));
    need = bytes > need ? bytes : need;
    temp_.resize(need, st);
  }

  Device device_;
  VolumeParams params_;
  SparseGrid grid_;
  long long capacity_;
  Stream stream_;
  unsigned int mask_ = 0;
  long long used_ = 0;
  long long refused_ = 0;
  BlockBounds bounds_;  // host copy of bounds_dev_ ({lo x y z, hi x y z})
  DeviceBuffer<unsigned long long> table_keys_;
  DeviceBuffer<int> table_slots_;
  DeviceBuffer<unsigned long long> coarse_keys_[kCoarseLevels];  // key sets of the coarse cells (coarse_key)
  DeviceBuffer<unsigned long long> block_keys_;                  // per pool slot
  DeviceBuffer<int> visible_;                                    // the slots a frame integrates (visible_kernel)
  DeviceBuffer<Voxel> voxels_;
  DeviceBuffer<ColorVoxel> colors_;  // empty without colour
  DeviceBuffer<int> bounds_dev_;
  DeviceBuffer<int> count_;
  // The allocation's scratch, by frame size.
  DeviceBuffer<unsigned long long> keys_a_, keys_b_, dist_a_, dist_b_;
  DeviceBuffer<unsigned char> flags_;
  DeviceBuffer<unsigned long long> request_set_, request_list_;  // the distinct requests (request_set_kernel)
  DeviceBuffer<unsigned char> temp_;
  DeviceBuffer<std::uint8_t> rgb_;
  DeviceBuffer<float> start_depth_;  // the ray cast's start tiles, grown to the largest map
  PinnedBuffer<std::uint8_t> rgb_staging_;
};

}  // namespace

std::unique_ptr<SparseVolumeBackend> make_cuda_sparse_volume(const Device& device, const VolumeParams& params) {
  validate_sparse_volume(params);
  return std::make_unique<CudaSparseVolume>(device, params);
}

}  // namespace s3d::fusion::detail
