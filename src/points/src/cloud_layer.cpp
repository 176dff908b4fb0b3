#include "s3d/points/cloud_layer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "s3d/core/errors.hpp"

namespace s3d::points {
namespace {

AttributeColumn take_column(const AttributeColumn& col, const std::vector<std::int64_t>& rows) {
  AttributeColumn out;  // the column's description without its values (a copy would duplicate them)
  out.name = col.name;
  out.type = col.type;
  out.components = col.components;
  out.is_list = col.is_list;
  out.count_type = col.count_type;
  const std::size_t value_size = scalar_size(col.type);
  if (!col.is_list) {
    const std::size_t item = value_size * static_cast<std::size_t>(col.components);
    out.bytes.resize(rows.size() * item);
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::memcpy(out.bytes.data() + i * item, col.bytes.data() + static_cast<std::size_t>(rows[i]) * item, item);
    return out;
  }
  out.offsets.reserve(rows.size() + 1);
  out.offsets.push_back(0);
  for (std::int64_t r : rows) {
    const std::uint64_t begin = col.offsets[static_cast<std::size_t>(r)];
    const std::uint64_t end = col.offsets[static_cast<std::size_t>(r) + 1];
    out.bytes.insert(out.bytes.end(), col.bytes.begin() + static_cast<std::ptrdiff_t>(begin * value_size),
                     col.bytes.begin() + static_cast<std::ptrdiff_t>(end * value_size));
    out.offsets.push_back(out.offsets.back() + (end - begin));
  }
  return out;
}

const AttributeColumn* vertex_list(const CloudElement& e) {
  for (const auto& p : e.properties)
    if (p.is_list && (p.name == "vertex_indices" || p.name == "vertex_index")) return &p;
  return nullptr;
}

/// The items of a face-like element whose vertices all survive, renumbered to their new rows (a vertex taken
/// twice keeps its first new row).
CloudElement remap_faces(const CloudElement& e, const AttributeColumn& list, const std::vector<std::int64_t>& new_row,
                         std::size_t& dropped) {
  std::vector<std::int64_t> items;
  for (std::size_t i = 0; i < e.count; ++i) {
    bool all = true;
    for (std::size_t v = 0; v < list.length(i) && all; ++v) {
      const double old = list.value(i, v);
      all = old >= 0 && old < static_cast<double>(new_row.size()) && new_row[static_cast<std::size_t>(old)] >= 0;
    }
    if (all) items.push_back(static_cast<std::int64_t>(i));
  }
  dropped += e.count - items.size();
  CloudElement out;
  out.name = e.name;
  out.count = items.size();
  for (const auto& p : e.properties) out.properties.push_back(take_column(p, items));
  for (auto& p : out.properties) {
    if (p.name != list.name) continue;
    for (std::size_t i = 0; i < out.count; ++i)
      for (std::size_t v = 0; v < p.length(i); ++v)
        p.set_value(i, v, static_cast<double>(new_row[static_cast<std::size_t>(p.value(i, v))]));
  }
  return out;
}

/// A fixed (non-list) column's values as doubles, [N, components].
std::vector<double> column_values(const AttributeColumn& c, std::size_t n) {
  std::vector<double> values(n * static_cast<std::size_t>(c.components));
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < c.components; ++k) values[i * c.components + k] = c.value(i, k);
  return values;
}

/// The original coordinate columns (x, y, z kept as attributes when not float32), or null for float32 files.
std::array<const AttributeColumn*, 3> coordinate_columns(const PointCloud& cloud) {
  std::array<const AttributeColumn*, 3> cols{};
  const char* names[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    const AttributeColumn* c = cloud.find(names[a]);
    cols[a] = (c && !c->is_list && c->components == 1) ? c : nullptr;
  }
  return cols;
}

double coordinate(const PointCloud& cloud, const std::array<const AttributeColumn*, 3>& cols, std::size_t i, int a) {
  return cols[a] ? cols[a]->value(i) : static_cast<double>(cloud.xyz[3 * i + a]);
}

/// The first non-finite coordinate of point i (a finite double beyond float's range is as unusable as NaN:
/// its float position is inf), or axis -1.
NonFinitePoint check_point(const PointCloud& cloud, const std::array<const AttributeColumn*, 3>& cols, std::size_t i) {
  for (int a = 0; a < 3; ++a) {
    const double v = coordinate(cloud, cols, i, a);
    if (!std::isfinite(v) || !std::isfinite(cloud.xyz[3 * i + a])) return {i, a, v};
  }
  return {i, -1, 0.0};
}

bool is_coordinate(const std::string& name) { return name == "x" || name == "y" || name == "z"; }

void expect_voxels_of(const PointCloud& in, const Voxels& v) {
  S3D_EXPECTS(v.point_voxel.size() == in.size() && v.representative.size() == static_cast<std::size_t>(v.count) &&
                  v.xyz.size() == 3 * static_cast<std::size_t>(v.count),
              "voxel_downsample: the voxels were not computed on this cloud (" + std::to_string(in.size()) +
                  " points, voxels of " + std::to_string(v.point_voxel.size()) + ")");
}

}  // namespace

std::optional<NonFinitePoint> first_non_finite(const PointCloud& cloud) {
  const auto cols = coordinate_columns(cloud);
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    const NonFinitePoint p = check_point(cloud, cols, i);
    if (p.axis >= 0) return p;
  }
  return std::nullopt;
}

std::vector<std::int64_t> finite_rows(const PointCloud& cloud) {
  const auto cols = coordinate_columns(cloud);
  std::vector<std::int64_t> rows;
  for (std::size_t i = 0; i < cloud.size(); ++i)
    if (check_point(cloud, cols, i).axis < 0) rows.push_back(static_cast<std::int64_t>(i));
  return rows;
}

std::array<double, 3> bbox_centre(const PointCloud& cloud) {
  const auto cols = coordinate_columns(cloud);
  std::array<double, 3> lo, hi;
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < cloud.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      const double v = coordinate(cloud, cols, i, a);
      lo[a] = std::min(lo[a], v);
      hi[a] = std::max(hi[a], v);
    }
  return {(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2};
}

std::vector<float> local_positions(const PointCloud& cloud, const std::array<double, 3>& origin) {
  const auto cols = coordinate_columns(cloud);
  std::vector<float> out(cloud.xyz.size());
  for (std::size_t i = 0; i < cloud.size(); ++i)
    for (int a = 0; a < 3; ++a) out[3 * i + a] = static_cast<float>(coordinate(cloud, cols, i, a) - origin[a]);
  return out;
}

PointCloud select_rows(const PointCloud& in, const std::vector<std::int64_t>& rows, bool drop_all,
                       ElementChanges& changes) {
  const auto n = static_cast<std::int64_t>(in.size());
  for (std::int64_t r : rows)
    S3D_EXPECTS(r >= 0 && r < n,
                "select_rows: row " + std::to_string(r) + " outside a cloud of " + std::to_string(n) + " points");
  PointCloud out;
  out.meta = in.meta;
  out.meta.width = 0;
  out.meta.height = 0;
  out.xyz.resize(rows.size() * 3);
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::memcpy(&out.xyz[3 * i], &in.xyz[3 * static_cast<std::size_t>(rows[i])], 3 * sizeof(float));
  for (const auto& col : in.attributes) out.attributes.push_back(take_column(col, rows));

  std::vector<std::int64_t> new_row(in.size(), -1);
  for (std::size_t i = rows.size(); i-- > 0;) new_row[static_cast<std::size_t>(rows[i])] = static_cast<std::int64_t>(i);
  out.meta.points_element_index = 0;
  for (std::size_t k = 0; k < in.elements.size(); ++k) {
    const CloudElement& e = in.elements[k];
    const AttributeColumn* list = vertex_list(e);
    if (drop_all || (list && e.name != "face" && e.name != "edge")) {
      changes.elements_dropped.push_back(e.name);
      continue;
    }
    // The points keep their place among the elements that remain (PLY writes them in that order).
    if (k < in.meta.points_element_index) ++out.meta.points_element_index;
    out.elements.push_back(list ? remap_faces(e, *list, new_row, changes.faces_dropped) : e);
  }
  return out;
}

void drop_elements(PointCloud& cloud, ElementChanges& changes) {
  for (const auto& e : cloud.elements) changes.elements_dropped.push_back(e.name);
  cloud.elements.clear();
  cloud.meta.points_element_index = 0;
}

PointCloud voxel_downsample(const PointCloud& in, const Voxels& v, VoxelAggregate aggregate, ElementChanges& changes) {
  expect_voxels_of(in, v);
  const std::vector<std::int64_t> rows(v.representative.begin(), v.representative.end());
  PointCloud out = select_rows(in, rows, true, changes);
  if (aggregate != VoxelAggregate::kMean) return out;
  std::copy(v.xyz.begin(), v.xyz.end(), out.xyz.begin());
  for (const AttributeColumn& src : in.attributes) {
    if (src.is_list) continue;
    const std::vector<double> values = column_values(src, in.size());
    const std::vector<double> mean = aggregate_attribute(v, aggregate, values.data(), src.components);
    AttributeColumn& dst = *out.find(src.name);
    const bool integer = !is_floating(dst.type);
    for (std::size_t j = 0; j < out.size(); ++j)
      for (int k = 0; k < src.components; ++k) {
        const double m = mean[j * src.components + k];
        dst.set_value(j, k, integer ? std::nearbyint(m) : m);
      }
    // Coordinates stored as another type than float32 (double): the positions follow their mean, so that the
    // writer keeps the doubles.
    for (int a = 0; a < 3; ++a)
      if (src.name == std::string(1, "xyz"[a]))
        for (std::size_t j = 0; j < out.size(); ++j) out.xyz[3 * j + a] = static_cast<float>(mean[j]);
  }
  return out;
}

VoxelFeatures voxel_features(const PointCloud& in, const Voxels& v, VoxelAggregate aggregate) {
  expect_voxels_of(in, v);
  std::vector<std::vector<double>> columns;
  VoxelFeatures f;
  f.names = {"x", "y", "z"};
  for (const AttributeColumn& c : in.attributes) {
    if (c.is_list || is_coordinate(c.name)) continue;
    const std::vector<double> values = column_values(c, in.size());
    columns.push_back(aggregate_attribute(v, aggregate, values.data(), c.components));
    for (int k = 0; k < c.components; ++k)
      f.names.push_back(c.components == 1 ? c.name : c.name + "[" + std::to_string(k) + "]");
  }
  const std::size_t width = f.names.size(), m = static_cast<std::size_t>(v.count);
  f.values.resize(m * width);
  for (std::size_t j = 0; j < m; ++j) {
    std::size_t at = j * width;
    for (int a = 0; a < 3; ++a) f.values[at++] = v.xyz[3 * j + a];
    for (const auto& col : columns) {
      const std::size_t comps = col.size() / std::max<std::size_t>(m, 1);
      for (std::size_t k = 0; k < comps; ++k) f.values[at++] = static_cast<float>(col[j * comps + k]);
    }
  }
  return f;
}

std::vector<std::string> missing_columns(const PointCloud& sparse, const PointCloud& dense) {
  std::vector<std::string> names;
  for (const auto& c : sparse.attributes)
    if (!c.is_list && !is_coordinate(c.name) && !dense.find(c.name)) names.push_back(c.name);
  return names;
}

void interpolate_columns(PointCloud& dense, const PointCloud& sparse, const std::vector<std::string>& names,
                         const Interpolation& w) {
  S3D_EXPECTS(w.queries == static_cast<std::int64_t>(dense.size()) && w.indices.size() == 3 * dense.size(),
              "interpolate_columns: the weights were not computed for this cloud");
  for (std::int32_t i : w.indices)
    S3D_EXPECTS(i < static_cast<std::int64_t>(sparse.size()),
                "interpolate_columns: the weights name points outside the sparse cloud");
  for (const std::string& name : names) {
    const AttributeColumn* src = sparse.find(name);
    S3D_EXPECTS(src != nullptr && !src->is_list,
                "interpolate_columns: " + sparse.meta.source + " has no fixed column " + name);
    const std::vector<double> values = column_values(*src, sparse.size());
    const std::vector<double> out = interpolate(w, values.data(), src->components);
    AttributeColumn* dst = dense.find(name);
    if (dst && (dst->is_list || dst->components != src->components))
      throw DataError(dense.meta.source + ": column " + name + " has another shape than the sparse cloud's");
    if (!dst) dst = &dense.add_attribute(name, src->type, src->components);
    const bool integer = !is_floating(dst->type);
    for (std::size_t q = 0; q < dense.size(); ++q)
      for (int c = 0; c < src->components; ++c) {
        const double v = out[q * src->components + c];
        dst->set_value(q, c, integer ? std::nearbyint(v) : v);
      }
  }
}

}  // namespace s3d::points
