// RulebookEngine: the spec and coordinate checks, the output grid, the one place that chooses a backend, and
// the inverse rulebook (a counting sort of the forward pairs, on the host for both backends).
#include "s3d/points/rulebook.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "rulebook_impl.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/select_backend.hpp"

namespace s3d::points {
namespace {

constexpr const char* kAxis[3] = {"z", "y", "x"};

std::string coord_text(const std::int32_t* c) {
  return "(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) + ", " +
         std::to_string(c[3]) + ")";
}

/// Cells of a batch of grids, or -1 when that overflows 63 bits.
std::int64_t cell_count(const std::int64_t shape[3], std::int64_t batch) {
  const std::int64_t limit = INT64_MAX;
  std::int64_t n = batch;
  for (int a = 0; a < 3; ++a) {
    if (shape[a] != 0 && n > limit / shape[a]) return -1;
    n *= shape[a];
  }
  return n;
}

void check_shape(const SparseCoords& in, std::int64_t rows) {
  S3D_EXPECTS(in.batch_size >= 1, "sparse coordinates: batch size must be >= 1, got " + std::to_string(in.batch_size));
  for (int a = 0; a < 3; ++a)
    S3D_EXPECTS(in.shape[a] >= 1, std::string("sparse coordinates: spatial shape along ") + kAxis[a] +
                                      " must be >= 1, got " + std::to_string(in.shape[a]));
  S3D_EXPECTS(rows >= 0 && rows < INT32_MAX,
              "sparse coordinates: " + std::to_string(rows) + " rows (at most 2^31 - 2)");
}

void check_coords(const SparseCoords& in) {
  S3D_EXPECTS(in.coords.size() % 4 == 0, "sparse coordinates: " + std::to_string(in.coords.size()) +
                                             " values is not a whole number of (batch, z, y, x) rows");
  check_shape(in, in.count());
  detail::check_rows(in);
}

detail::ConvGeometry geometry_of(const SparseCoords& in, std::int64_t rows, const ConvSpec& spec) {
  detail::ConvGeometry g{};
  g.batch_size = in.batch_size;
  g.kernel_volume = spec.volume();
  for (int a = 0; a < 3; ++a) {
    g.in_shape[a] = in.shape[a];
    g.kernel[a] = spec.kernel[a];
    g.stride[a] = spec.subm ? 1 : spec.stride[a];
    g.dilation[a] = spec.dilation[a];
    g.padding[a] = spec.subm ? (spec.kernel[a] / 2) * spec.dilation[a] : spec.padding[a];
    if (spec.subm) {
      g.out_shape[a] = in.shape[a];
    } else {
      const std::int64_t span = static_cast<std::int64_t>(in.shape[a]) + 2LL * spec.padding[a] -
                                static_cast<std::int64_t>(spec.dilation[a]) * (spec.kernel[a] - 1) - 1;
      if (span < 0)
        throw DataError(std::string("the kernel (with dilation) is larger than the padded input along ") + kAxis[a] +
                        ": no output cell");
      g.out_shape[a] = span / spec.stride[a] + 1;
    }
    if (g.out_shape[a] > INT32_MAX)
      throw DataError(std::string("the output grid along ") + kAxis[a] + " exceeds 2^31 - 1 cells");
  }
  if (cell_count(g.in_shape, g.batch_size) < 0 || cell_count(g.out_shape, g.batch_size) < 0)
    throw DataError("batch x grid volume overflows 63 bits");
  const std::int64_t slots = static_cast<std::int64_t>(g.kernel_volume) * rows;
  if (slots >= INT32_MAX) throw DataError("kernel volume x voxels exceeds 2^31 - 1 rulebook slots");
  return g;
}

}  // namespace

void ConvSpec::validate() const {
  for (int a = 0; a < 3; ++a) {
    const std::string axis = std::string(" along ") + kAxis[a];
    S3D_EXPECTS(kernel[a] >= 1 && kernel[a] <= 15,
                "kernel size" + axis + " must be in [1, 15], got " + std::to_string(kernel[a]));
    S3D_EXPECTS(stride[a] >= 1, "stride" + axis + " must be >= 1, got " + std::to_string(stride[a]));
    S3D_EXPECTS(dilation[a] >= 1 && dilation[a] <= 1024,
                "dilation" + axis + " must be in [1, 1024], got " + std::to_string(dilation[a]));
    S3D_EXPECTS(padding[a] >= 0 && padding[a] <= 1 << 20,
                "padding" + axis + " must be in [0, 2^20], got " + std::to_string(padding[a]));
    if (subm) {
      S3D_EXPECTS(kernel[a] % 2 == 1, "a submanifold kernel must be odd" + axis + ", got " + std::to_string(kernel[a]));
      S3D_EXPECTS(stride[a] == 1,
                  "a submanifold convolution has stride 1" + axis + ", got " + std::to_string(stride[a]));
      const int centred = (kernel[a] / 2) * dilation[a];
      S3D_EXPECTS(padding[a] == 0 || padding[a] == centred,
                  "a submanifold convolution pads (kernel / 2) x dilation = " + std::to_string(centred) + axis +
                      ", got " + std::to_string(padding[a]));
    }
  }
  S3D_EXPECTS(volume() <= 1024, "kernel volume must be <= 1024, got " + std::to_string(volume()));
}

std::vector<std::int32_t> Rulebook::spconv_pairs(std::int64_t n_max) const {
  const std::int32_t most = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  S3D_EXPECTS(n_max >= most,
              "spconv pairs: N_max " + std::to_string(n_max) + " < the largest offset count " + std::to_string(most));
  const std::size_t k_count = static_cast<std::size_t>(kernel_volume);
  const std::size_t n = static_cast<std::size_t>(n_max);
  std::vector<std::int32_t> out(2 * k_count * n, -1);
  for (std::size_t k = 0; k < k_count; ++k)
    for (std::int64_t p = offsets[k]; p < offsets[k + 1]; ++p) {
      const std::size_t slot = static_cast<std::size_t>(p - offsets[k]);
      out[k * n + slot] = in_index[static_cast<std::size_t>(p)];
      out[(k_count + k) * n + slot] = out_index[static_cast<std::size_t>(p)];
    }
  return out;
}

namespace detail {

void check_rows(const SparseCoords& in) {
  for (std::int64_t r = 0; r < in.count(); ++r) {
    const std::int32_t* c = in.coords.data() + 4 * r;
    if (c[0] < 0 || c[0] >= in.batch_size)
      throw DataError("row " + std::to_string(r) + " " + coord_text(c) + ": batch id outside [0, " +
                      std::to_string(in.batch_size) + ")");
    for (int a = 0; a < 3; ++a)
      if (c[1 + a] < 0 || c[1 + a] >= in.shape[a])
        throw DataError("row " + std::to_string(r) + " " + coord_text(c) + ": " + kAxis[a] + " outside [0, " +
                        std::to_string(in.shape[a]) + ") of the spatial shape");
  }
}

std::int64_t first_duplicate_row(const SparseCoords& in) {
  const std::int64_t shape[3] = {in.shape[0], in.shape[1], in.shape[2]};
  std::unordered_map<std::uint64_t, std::int64_t> seen;
  seen.reserve(static_cast<std::size_t>(in.count()));
  for (std::int64_t r = 0; r < in.count(); ++r) {
    const std::int32_t* c = in.coords.data() + 4 * r;
    if (!seen.emplace(linear_key(shape, c[0], c[1], c[2], c[3]), r).second) return r;
  }
  return -1;
}

void throw_duplicate(const SparseCoords& in, std::int64_t row) {
  const std::int64_t shape[3] = {in.shape[0], in.shape[1], in.shape[2]};
  const std::int32_t* c = in.coords.data() + 4 * row;
  const std::uint64_t key = linear_key(shape, c[0], c[1], c[2], c[3]);
  std::int64_t first = 0;
  while (first < row) {
    const std::int32_t* f = in.coords.data() + 4 * first;
    if (linear_key(shape, f[0], f[1], f[2], f[3]) == key) break;
    ++first;
  }
  throw DataError("row " + std::to_string(row) + " " + coord_text(c) + " repeats row " + std::to_string(first) +
                  ": active voxels must be unique");
}

void throw_table_full(std::uint64_t capacity) {
  throw DataError("voxel hash table full: every one of its " + std::to_string(capacity) +
                  " slots is taken (tables are sized at 2x the keys; this one was given fewer slots than keys)");
}

std::vector<std::int32_t> probe_voxel_table(const Device& device, const std::vector<std::uint64_t>& keys,
                                            std::uint64_t capacity, const std::vector<std::uint64_t>& queries) {
  S3D_EXPECTS(capacity >= 1 && (capacity & (capacity - 1)) == 0, "hash table capacity must be a power of two");
  const auto impl = select_backend<RulebookEngine::Impl>(
      device, "voxel hash table", [&](const Device& d) { return make_cpu_rulebook(d); },
      S3D_CUDA_FACTORY([&](const Device& d) { return make_cuda_rulebook(d); }));
  return impl->probe_table(keys, capacity, queries);
}

}  // namespace detail

RulebookEngine::RulebookEngine(const Device& device) {
  impl_ = select_backend<RulebookEngine::Impl>(
      device, "RulebookEngine", [&](const Device& d) { return detail::make_cpu_rulebook(d); },
      S3D_CUDA_FACTORY([&](const Device& d) { return detail::make_cuda_rulebook(d); }));
}
RulebookEngine::~RulebookEngine() = default;
RulebookEngine::RulebookEngine(RulebookEngine&&) noexcept = default;
RulebookEngine& RulebookEngine::operator=(RulebookEngine&&) noexcept = default;
const Device& RulebookEngine::device() const { return impl_->device_; }

Rulebook RulebookEngine::build(const SparseCoords& in, const ConvSpec& spec) {
  spec.validate();
  check_coords(in);
  const detail::ConvGeometry g = geometry_of(in, in.count(), spec);
  Rulebook rb;
  rb.kernel_volume = g.kernel_volume;
  rb.inputs = in.count();
  rb.out.batch_size = in.batch_size;
  for (int a = 0; a < 3; ++a) rb.out.shape[a] = static_cast<std::int32_t>(g.out_shape[a]);
  impl_->build(in, g, spec.subm, &rb);
  if (rb.inputs > 0 && rb.out.count() == 0)
    throw DataError("no output voxel: every input falls outside the output grid (" + std::to_string(rb.out.shape[0]) +
                    " x " + std::to_string(rb.out.shape[1]) + " x " + std::to_string(rb.out.shape[2]) + ")");
  return rb;
}

DeviceRulebook RulebookEngine::build_device(const std::int32_t* coords, std::int64_t count,
                                            std::array<std::int32_t, 3> shape, int batch_size, const ConvSpec& spec) {
  S3D_EXPECTS(!impl_->device_.is_cpu(), "RulebookEngine::build_device needs a CUDA engine");
  spec.validate();
  SparseCoords shape_only;
  shape_only.shape = shape;
  shape_only.batch_size = batch_size;
  check_shape(shape_only, count);
  S3D_EXPECTS(count == 0 || coords != nullptr, "RulebookEngine::build_device: null coordinates");
  const detail::ConvGeometry g = geometry_of(shape_only, count, spec);
  DeviceRulebook rb = impl_->build_device(coords, count, shape_only, g, spec.subm);
  if (count > 0 && rb.outputs == 0) throw DataError("no output voxel: every input falls outside the output grid");
  return rb;
}

Rulebook RulebookEngine::inverse(const Rulebook& forward, const SparseCoords& forward_in) {
  check_coords(forward_in);
  const std::int64_t n_out = forward_in.count();
  const std::int64_t n_in = forward.out.count();
  const std::size_t k_count = static_cast<std::size_t>(forward.kernel_volume);
  S3D_EXPECTS(forward.inputs == n_out, "inverse rulebook: the forward rulebook has " + std::to_string(forward.inputs) +
                                           " inputs, the coordinates " + std::to_string(n_out));
  S3D_EXPECTS(forward.offsets.size() == k_count + 1 && forward.in_index.size() == forward.out_index.size() &&
                  forward.offsets.back() == forward.pairs(),
              "inverse rulebook: the forward rulebook's offsets and pairs disagree");
  Rulebook rb;
  rb.kernel_volume = forward.kernel_volume;
  rb.inputs = n_in;
  rb.out = forward_in;
  rb.counts = forward.counts;
  rb.offsets = forward.offsets;
  rb.in_index.resize(forward.in_index.size());
  rb.out_index.resize(forward.out_index.size());
  // Per offset, a stable counting sort by the new output (the forward input): the forward pairs are in
  // forward-output order, which is the new input order, so ties keep (output, input) order.
  std::vector<std::int64_t> start(static_cast<std::size_t>(n_out) + 1);
  for (std::size_t k = 0; k < k_count; ++k) {
    const std::int64_t b = forward.offsets[k], e = forward.offsets[k + 1];
    std::fill(start.begin(), start.end(), 0);
    for (std::int64_t p = b; p < e; ++p) {
      const std::int32_t o = forward.in_index[static_cast<std::size_t>(p)];
      const std::int32_t i = forward.out_index[static_cast<std::size_t>(p)];
      S3D_EXPECTS(o >= 0 && o < n_out && i >= 0 && i < n_in,
                  "inverse rulebook: pair " + std::to_string(p) + " indexes outside the inputs or outputs");
      ++start[static_cast<std::size_t>(o) + 1];
    }
    for (std::size_t r = 1; r < start.size(); ++r) start[r] += start[r - 1];
    for (std::int64_t p = b; p < e; ++p) {
      const std::size_t o = static_cast<std::size_t>(forward.in_index[static_cast<std::size_t>(p)]);
      const std::size_t slot = static_cast<std::size_t>(b + start[o]++);
      rb.out_index[slot] = static_cast<std::int32_t>(o);
      rb.in_index[slot] = forward.out_index[static_cast<std::size_t>(p)];
    }
  }
  return rb;
}

}  // namespace s3d::points
