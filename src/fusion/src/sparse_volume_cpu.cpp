// The sparse TSDF volume, CPU backend (the oracle of the CUDA one): the shared math of
// sparse_volume_integrate.hpp / sparse_volume_raycast.hpp in OpenMP loops, the allocation serial (a sort and a
// unique of the frame's requests), so the set of blocks, their slots and their voxels are the CUDA backend's.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include <omp.h>

#include "integrate_lanes.hpp"
#include "s3d/core/errors.hpp"
#include "sparse_volume.hpp"
#include "sparse_volume_cpu.hpp"
#include "volume_common.hpp"

namespace s3d::fusion::detail {
namespace {

constexpr unsigned int kRequestCache = 4096;  ///< entries of allocate()'s per-thread repeat filter (a power of 2)

class CpuSparseVolume final : public SparseVolumeBackend {
 public:
  explicit CpuSparseVolume(const VolumeParams& params)
      : params_(params), grid_(make_sparse_grid(params)), capacity_(sparse_block_capacity(params)) {
    const unsigned int entries = sparse_hash_entries(capacity_);
    keys_.assign(entries, kEmptyKey);
    slots_.assign(entries, -1);
    mask_ = entries - 1;
    for (auto& level : coarse_) level.assign(entries, kEmptyKey);
    block_keys_.resize(static_cast<std::size_t>(capacity_));
    voxels_.resize(static_cast<std::size_t>(capacity_ * kBlockVoxels));
    if (params.color) colors_.resize(voxels_.size());
  }

  void reset() override {
    std::fill(keys_.begin(), keys_.end(), kEmptyKey);
    for (auto& level : coarse_) std::fill(level.begin(), level.end(), kEmptyKey);
    used_ = 0;
    refused_ = 0;
    bounds_ = BlockBounds{};
  }

  void integrate(ImageView<const float> depth_m, const std::uint8_t* rgb, const CameraIntrinsics& camera,
                 const Rigid& camera_to_world) override {
    if (depth_m.empty()) return;
    allocate(depth_m, camera, camera_to_world);
    const IntegrateArgs a = make_integrate_args(grid_.lattice, depth_m, camera, camera_to_world);
    const SparseGrid g = grid_;
    const float* depth = depth_m.data;
    const long long pitch = depth_m.pitch;
    const bool color = rgb != nullptr && !colors_.empty();
#pragma omp parallel for schedule(dynamic, 8)
    for (long long s = 0; s < used_; ++s) {
      const BlockCoord b = unpack_block(block_keys_[s]);
      if (!block_maybe_visible(a, g, b)) continue;
      Voxel* vox = voxels_.data() + s * kBlockVoxels;
      ColorVoxel* col = color ? colors_.data() + s * kBlockVoxels : nullptr;
      if (integrate_block_lanes_cpu(vox, col, a, depth, pitch, rgb, b.x * kBlockSide, b.y * kBlockSide,
                                    b.z * kBlockSide))
        continue;
      for (int l = 0; l < kBlockVoxels; ++l)
        integrate_voxel(a, depth, pitch, rgb, b, l, vox + l, col ? col + l : nullptr);
    }
  }

  void raycast(const CameraIntrinsics& camera, const Rigid& camera_to_world, Maps out) override {
    if (out.width <= 0 || out.height <= 0) return;
    SparseRaycastArgs a =
        make_sparse_raycast_args(grid_, params_, camera, camera_to_world, out.width, out.height, bounds_);
    if (start_tiles_) {
      start_tiles(a);
      a.start_depth = start_depth_.data();
    }
    const SparseVoxels vol{
        hash(), voxels_.data(), {{coarse_[0].data(), nullptr, mask_}, {coarse_[1].data(), nullptr, mask_}}};
#pragma omp parallel for schedule(dynamic, 1)
    for (int y = 0; y < out.height; ++y)
      for (int x = 0; x < out.width; ++x) {
        const long long p = static_cast<long long>(y) * out.width + x;
        sparse_raycast_pixel(vol, a, x, y, out.vertices[p], out.normals[p]);
      }
  }

  Mesh extract_mesh(int /*slab_slices*/) override {
    std::vector<unsigned long long> keys;
    std::vector<int> order;
    sorted(keys, order);
    return sparse_mesh_cpu(host_volume(keys, order));
  }

  SurfaceCloud extract_cloud(int /*slab_slices*/) override {
    std::vector<unsigned long long> keys;
    std::vector<int> order;
    sorted(keys, order);
    return sparse_cloud_cpu(host_volume(keys, order));
  }

  void download(std::vector<std::int16_t>& tsdf, std::vector<std::int16_t>& weight) override {
    const std::vector<int> slots = sorted_slots();
    tsdf.resize(slots.size() * kBlockVoxels);
    weight.resize(tsdf.size());
    for (std::size_t b = 0; b < slots.size(); ++b)
      for (int l = 0; l < kBlockVoxels; ++l) {
        const Voxel v = voxels_[static_cast<std::size_t>(slots[b]) * kBlockVoxels + l];
        tsdf[b * kBlockVoxels + l] = v.tsdf;
        weight[b * kBlockVoxels + l] = v.weight;
      }
  }

  void download_colors(std::vector<std::uint8_t>& rgbw) override {
    if (colors_.empty()) {
      rgbw.clear();
      return;
    }
    const std::vector<int> slots = sorted_slots();
    rgbw.resize(slots.size() * kBlockVoxels * 4);
    for (std::size_t b = 0; b < slots.size(); ++b)
      std::memcpy(rgbw.data() + b * kBlockVoxels * 4,
                  colors_.data() + static_cast<std::size_t>(slots[b]) * kBlockVoxels, kBlockVoxels * 4);
  }

  std::vector<BlockCoord> blocks() override {
    return sorted_blocks(std::vector<unsigned long long>(block_keys_.begin(), block_keys_.begin() + used_));
  }

  SparseStats stats() override { return {capacity_, used_, refused_}; }

 private:
  BlockHash hash() const { return {keys_.data(), slots_.data(), mask_}; }

  /// start_depth_ for the ray cast `a` (sparse_volume_raycast.hpp: block_start_tiles): per thread, then the
  /// least of the threads' (a minimum, so the same whatever the thread count). The buffers grow with the largest
  /// map and thread count and are reused.
  void start_tiles(const SparseRaycastArgs& a) {
    const std::size_t tiles = static_cast<std::size_t>(a.tile_cols) * a.tile_rows;
    start_depth_.assign(tiles, INFINITY);
#pragma omp parallel
    {
#pragma omp single
      if (thread_tiles_.size() < tiles * omp_get_num_threads()) thread_tiles_.resize(tiles * omp_get_num_threads());
      float* mine = thread_tiles_.data() + tiles * omp_get_thread_num();  // after the single's barrier
      std::fill_n(mine, tiles, INFINITY);
#pragma omp for schedule(static) nowait
      for (long long s = 0; s < used_; ++s) {
        int r[4];
        float depth;
        if (!block_start_tiles(a, unpack_block(block_keys_[s]), r, depth)) continue;
        for (int ty = r[1]; ty <= r[3]; ++ty)
          for (int tx = r[0]; tx <= r[2]; ++tx) {
            float& z = mine[static_cast<std::size_t>(ty) * a.tile_cols + tx];
            z = std::min(z, depth);
          }
      }
#pragma omp critical
      for (std::size_t t = 0; t < tiles; ++t) start_depth_[t] = std::min(start_depth_[t], mine[t]);
    }
  }

  /// The entry of `table` that holds `key`, or the empty one its probe reaches first.
  unsigned int free_entry(const std::vector<unsigned long long>& table, unsigned long long key) const {
    unsigned int e = hash_entry(key, mask_);
    while (table[e] != kEmptyKey && table[e] != key) e = (e + 1) & mask_;
    return e;
  }

  /// Steps 1 and 2 of sparse_volume.hpp: the frame's requests, sorted and unique; the new ones into the pool.
  void allocate(ImageView<const float> depth, const CameraIntrinsics& camera, const Rigid& camera_to_world) {
    const AllocateArgs a = make_allocate_args(grid_, depth, camera, camera_to_world);
    std::vector<unsigned long long> requests;
#pragma omp parallel
    {
      std::vector<unsigned long long> mine, segment(static_cast<std::size_t>(a.max_blocks));
      // Neighbouring pixels request mostly the same blocks: a small direct-mapped cache of the keys this thread
      // has kept drops most repeats before the sort (which drops the rest; the result is the same).
      std::array<unsigned long long, kRequestCache> seen;
      seen.fill(kEmptyKey);
#pragma omp for schedule(static) nowait
      for (int v = 0; v < depth.height; ++v)
        for (int u = 0; u < depth.width; ++u) {
          const int n = segment_blocks(a, depth.data, depth.pitch, u, v, segment.data());
          for (int i = 0; i < n; ++i) {
            unsigned long long& slot = seen[hash_entry(segment[i], kRequestCache - 1)];
            if (slot == segment[i]) continue;
            slot = segment[i];
            mine.push_back(segment[i]);
          }
        }
      std::sort(mine.begin(), mine.end());
      mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
#pragma omp critical
      requests.insert(requests.end(), mine.begin(), mine.end());
    }
    std::sort(requests.begin(), requests.end());
    requests.erase(std::unique(requests.begin(), requests.end()), requests.end());
    const BlockHash h = hash();
    std::vector<unsigned long long> fresh;
    for (unsigned long long key : requests)
      if (h.find(key) < 0) fresh.push_back(key);
    const long long free = capacity_ - used_;
    if (static_cast<long long>(fresh.size()) > free) {
      const BlockCoord c = camera_block(grid_, camera_to_world);
      std::stable_sort(fresh.begin(), fresh.end(), [c](unsigned long long x, unsigned long long y) {
        return block_distance2(x, c) < block_distance2(y, c);
      });
      refused_ += static_cast<long long>(fresh.size()) - free;
      fresh.resize(static_cast<std::size_t>(free));
    }
    for (unsigned long long key : fresh) {
      const long long s = used_++;
      const unsigned int e = free_entry(keys_, key);  // not present: a free entry
      keys_[e] = key;
      slots_[e] = static_cast<int>(s);
      block_keys_[s] = key;
      bounds_.add(unpack_block(key));
      for (int level = 0; level < kCoarseLevels; ++level) {
        const unsigned long long c = coarse_key(unpack_block(key), level);
        coarse_[level][free_entry(coarse_[level], c)] = c;  // its entry if present, else a free one
      }
      std::fill_n(voxels_.begin() + s * kBlockVoxels, kBlockVoxels, Voxel{0, 0});
      if (!colors_.empty()) std::fill_n(colors_.begin() + s * kBlockVoxels, kBlockVoxels, ColorVoxel{0, 0, 0, 0});
    }
  }

  /// The allocated blocks' keys sorted, and each pool slot's position among them.
  void sorted(std::vector<unsigned long long>& keys, std::vector<int>& order) const {
    const std::vector<int> slots = sorted_slots();
    keys.resize(slots.size());
    order.assign(static_cast<std::size_t>(used_), -1);
    for (std::size_t b = 0; b < slots.size(); ++b) {
      keys[b] = block_keys_[slots[b]];
      order[slots[b]] = static_cast<int>(b);
    }
  }

  std::vector<int> sorted_slots() const {
    std::vector<int> slots(static_cast<std::size_t>(used_));
    for (long long s = 0; s < used_; ++s) slots[s] = static_cast<int>(s);
    std::sort(slots.begin(), slots.end(), [this](int x, int y) { return block_keys_[x] < block_keys_[y]; });
    return slots;
  }

  SparseHostVolume host_volume(const std::vector<unsigned long long>& keys, const std::vector<int>& order) const {
    return {grid_, hash(), voxels_.data(), colors_.empty() ? nullptr : colors_.data(), &keys, &order};
  }

  VolumeParams params_;
  SparseGrid grid_;
  long long capacity_;
  long long used_ = 0;
  long long refused_ = 0;
  BlockBounds bounds_;  // of the allocated blocks
  unsigned int mask_ = 0;
  std::vector<unsigned long long> keys_;  // hash entries
  std::vector<int> slots_;
  std::vector<unsigned long long> coarse_[kCoarseLevels];  // key sets of the coarse cells (coarse_key)
  std::vector<unsigned long long> block_keys_;             // per pool slot
  std::vector<Voxel> voxels_;
  std::vector<ColorVoxel> colors_;   // empty without colour
  std::vector<float> start_depth_;   // the ray cast's start tiles
  std::vector<float> thread_tiles_;  // each thread's start tiles before their minimum
};

}  // namespace

std::unique_ptr<SparseVolumeBackend> make_cpu_sparse_volume(const VolumeParams& params) {
  validate_sparse_volume(params);
  return std::make_unique<CpuSparseVolume>(params);
}

}  // namespace s3d::fusion::detail
