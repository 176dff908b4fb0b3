// RulebookEngine, CPU backend (the oracle): the same steps as the CUDA backend, one after another. An
// open-addressing table maps input keys to rows; regular outputs are the sorted unique candidate keys; the
// pairs are read from the output side, offset by offset, so each offset's pairs come out in output order.
#include <algorithm>
#include <vector>

#include "rulebook_impl.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::points::detail {
namespace {

constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

/// Linear probing over a power-of-two table, load factor <= 0.5.
class HostVoxelTable {
 public:
  void reset(std::uint64_t capacity) {
    keys_.assign(capacity, kEmpty);
    rows_.assign(capacity, -1);
    mask_ = capacity - 1;
  }
  enum class Insert { kDone, kDuplicate, kFull };
  Insert insert(std::uint64_t key, std::int32_t row) {
    std::uint64_t s = mix_key(key) & mask_;
    for (std::uint64_t probes = 0; probes <= mask_; ++probes, s = (s + 1) & mask_) {
      if (keys_[s] == key) return Insert::kDuplicate;
      if (keys_[s] == kEmpty) {
        keys_[s] = key;
        rows_[s] = row;
        return Insert::kDone;
      }
    }
    return Insert::kFull;
  }
  std::int32_t find(std::uint64_t key) const {
    std::uint64_t s = mix_key(key) & mask_;
    for (std::uint64_t probes = 0; probes <= mask_; ++probes, s = (s + 1) & mask_) {
      if (keys_[s] == key) return rows_[s];
      if (keys_[s] == kEmpty) return -1;
    }
    return -1;
  }
  std::uint64_t capacity() const { return mask_ + 1; }

 private:
  std::vector<std::uint64_t> keys_;
  std::vector<std::int32_t> rows_;
  std::uint64_t mask_ = 0;
};

class CpuRulebook final : public RulebookEngine::Impl {
 public:
  using Impl::Impl;

  void build(const SparseCoords& in, const ConvGeometry& g, bool subm, Rulebook* rb) override {
    const std::int64_t m = in.count();
    const std::int32_t* coords = in.coords.data();
    table_.reset(hash_capacity(m));
    for (std::int64_t r = 0; r < m; ++r) {
      const std::int32_t* c = coords + 4 * r;
      if (table_.insert(linear_key(g.in_shape, c[0], c[1], c[2], c[3]), static_cast<std::int32_t>(r)) !=
          HostVoxelTable::Insert::kDone)
        throw_duplicate(in, first_duplicate_row(in));
    }
    if (subm) {
      rb->out.coords = in.coords;
    } else {
      candidates_.clear();
      for (std::int64_t r = 0; r < m; ++r) {
        const std::int32_t* c = coords + 4 * r;
        std::int32_t o[3];
        for (int k = 0; k < g.kernel_volume; ++k)
          if (output_at(g, c + 1, k, o)) candidates_.push_back(linear_key(g.out_shape, c[0], o[0], o[1], o[2]));
      }
      std::sort(candidates_.begin(), candidates_.end());
      candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
      rb->out.coords.resize(4 * candidates_.size());
      for (std::size_t r = 0; r < candidates_.size(); ++r)
        decode_key(candidates_[r], g.out_shape, &rb->out.coords[4 * r]);
    }
    const std::int64_t n_out = rb->out.count();
    const std::int32_t* out_coords = rb->out.coords.data();
    rb->counts.assign(static_cast<std::size_t>(g.kernel_volume), 0);
    rb->offsets.assign(static_cast<std::size_t>(g.kernel_volume) + 1, 0);
    rb->in_index.clear();
    rb->out_index.clear();
    for (int k = 0; k < g.kernel_volume; ++k) {
      for (std::int64_t r = 0; r < n_out; ++r) {
        const std::int32_t* o = out_coords + 4 * r;
        std::int32_t i[3];
        if (!input_at(g, o + 1, k, i)) continue;
        const std::int32_t row = table_.find(linear_key(g.in_shape, o[0], i[0], i[1], i[2]));
        if (row < 0) continue;
        rb->in_index.push_back(row);
        rb->out_index.push_back(static_cast<std::int32_t>(r));
      }
      rb->offsets[static_cast<std::size_t>(k) + 1] = static_cast<std::int64_t>(rb->in_index.size());
      rb->counts[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(rb->offsets[static_cast<std::size_t>(k) + 1] -
                                                                          rb->offsets[static_cast<std::size_t>(k)]);
    }
  }

  DeviceRulebook build_device(const std::int32_t*, std::int64_t, const SparseCoords&, const ConvGeometry&,
                              bool) override {
    throw InvalidArgument("RulebookEngine::build_device needs a CUDA engine");
  }

  std::vector<std::int32_t> probe_table(const std::vector<std::uint64_t>& keys, std::uint64_t capacity,
                                        const std::vector<std::uint64_t>& queries) override {
    table_.reset(capacity);
    for (std::size_t r = 0; r < keys.size(); ++r) {
      const HostVoxelTable::Insert done = table_.insert(keys[r], static_cast<std::int32_t>(r));
      if (done == HostVoxelTable::Insert::kFull) throw_table_full(capacity);
      if (done == HostVoxelTable::Insert::kDuplicate) throw DataError("voxel hash table: key inserted twice");
    }
    std::vector<std::int32_t> rows(queries.size());
    for (std::size_t q = 0; q < queries.size(); ++q) rows[q] = table_.find(queries[q]);
    return rows;
  }

 private:
  HostVoxelTable table_;
  std::vector<std::uint64_t> candidates_;
};

}  // namespace

std::unique_ptr<RulebookEngine::Impl> make_cpu_rulebook(const Device& device) {
  return std::make_unique<CpuRulebook>(device);
}

}  // namespace s3d::points::detail
