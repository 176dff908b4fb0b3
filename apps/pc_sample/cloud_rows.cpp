#include "cloud_rows.hpp"

#include <cstring>

namespace s3d::pc_sample {
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

}  // namespace

PointCloud take_rows(const PointCloud& in, const std::vector<std::int64_t>& rows, bool drop_all, RowStats& stats) {
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
      stats.elements_dropped.push_back(e.name);
      continue;
    }
    // The points keep their place among the elements that remain (PLY writes them in that order).
    if (k < in.meta.points_element_index) ++out.meta.points_element_index;
    out.elements.push_back(list ? remap_faces(e, *list, new_row, stats.faces_dropped) : e);
  }
  return out;
}

void drop_elements(PointCloud& cloud, RowStats& stats) {
  for (const auto& e : cloud.elements) stats.elements_dropped.push_back(e.name);
  cloud.elements.clear();
  cloud.meta.points_element_index = 0;
}

}  // namespace s3d::pc_sample
