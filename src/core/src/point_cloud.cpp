#include "s3d/core/point_cloud.hpp"

#include "s3d/core/errors.hpp"

namespace s3d {
namespace {

template <typename T>
double load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<double>(v);
}

template <typename T>
void store(std::uint8_t* p, double v) {
  const T t = static_cast<T>(v);
  std::memcpy(p, &t, sizeof(T));
}

double load_scalar(ScalarType type, const std::uint8_t* p) {
  switch (type) {
    case ScalarType::kInt8:
      return load<std::int8_t>(p);
    case ScalarType::kUint8:
      return load<std::uint8_t>(p);
    case ScalarType::kInt16:
      return load<std::int16_t>(p);
    case ScalarType::kUint16:
      return load<std::uint16_t>(p);
    case ScalarType::kInt32:
      return load<std::int32_t>(p);
    case ScalarType::kUint32:
      return load<std::uint32_t>(p);
    case ScalarType::kFloat32:
      return load<float>(p);
    case ScalarType::kFloat64:
      return load<double>(p);
  }
  return 0.0;
}

void store_scalar(ScalarType type, std::uint8_t* p, double v) {
  switch (type) {
    case ScalarType::kInt8:
      return store<std::int8_t>(p, v);
    case ScalarType::kUint8:
      return store<std::uint8_t>(p, v);
    case ScalarType::kInt16:
      return store<std::int16_t>(p, v);
    case ScalarType::kUint16:
      return store<std::uint16_t>(p, v);
    case ScalarType::kInt32:
      return store<std::int32_t>(p, v);
    case ScalarType::kUint32:
      return store<std::uint32_t>(p, v);
    case ScalarType::kFloat32:
      return store<float>(p, v);
    case ScalarType::kFloat64:
      return store<double>(p, v);
  }
}

std::size_t value_index(const AttributeColumn& c, std::size_t item, std::size_t component) {
  return c.is_list ? c.offsets[item] + component : item * static_cast<std::size_t>(c.components) + component;
}

}  // namespace

std::size_t scalar_size(ScalarType type) {
  switch (type) {
    case ScalarType::kInt8:
    case ScalarType::kUint8:
      return 1;
    case ScalarType::kInt16:
    case ScalarType::kUint16:
      return 2;
    case ScalarType::kInt32:
    case ScalarType::kUint32:
    case ScalarType::kFloat32:
      return 4;
    case ScalarType::kFloat64:
      return 8;
  }
  return 0;
}

const char* scalar_name(ScalarType type) {
  switch (type) {
    case ScalarType::kInt8:
      return "int8";
    case ScalarType::kUint8:
      return "uint8";
    case ScalarType::kInt16:
      return "int16";
    case ScalarType::kUint16:
      return "uint16";
    case ScalarType::kInt32:
      return "int32";
    case ScalarType::kUint32:
      return "uint32";
    case ScalarType::kFloat32:
      return "float32";
    case ScalarType::kFloat64:
      return "float64";
  }
  return "?";
}

bool is_floating(ScalarType type) { return type == ScalarType::kFloat32 || type == ScalarType::kFloat64; }

double AttributeColumn::value(std::size_t item, std::size_t component) const {
  return load_scalar(type, bytes.data() + value_index(*this, item, component) * scalar_size(type));
}

void AttributeColumn::set_value(std::size_t item, std::size_t component, double v) {
  store_scalar(type, bytes.data() + value_index(*this, item, component) * scalar_size(type), v);
}

std::size_t AttributeColumn::length(std::size_t item) const {
  return is_list ? static_cast<std::size_t>(offsets[item + 1] - offsets[item]) : static_cast<std::size_t>(components);
}

void PointCloud::resize(std::size_t n) {
  for (const auto& a : attributes)
    if (a.is_list) throw InvalidArgument("cannot resize a cloud with list attribute '" + a.name + "'");
  xyz.resize(3 * n, 0.0f);
  for (auto& a : attributes) a.bytes.resize(n * a.components * scalar_size(a.type), 0);
}

const AttributeColumn* PointCloud::find(const std::string& name) const {
  for (const auto& a : attributes)
    if (a.name == name) return &a;
  return nullptr;
}

AttributeColumn* PointCloud::find(const std::string& name) {
  for (auto& a : attributes)
    if (a.name == name) return &a;
  return nullptr;
}

AttributeColumn& PointCloud::add_attribute(const std::string& name, ScalarType type, int components) {
  S3D_EXPECTS(!name.empty(), "attribute name must not be empty");
  S3D_EXPECTS(components >= 1, "attribute '" + name + "' needs at least one component");
  S3D_EXPECTS(find(name) == nullptr, "attribute '" + name + "' already exists");
  AttributeColumn c;
  c.name = name;
  c.type = type;
  c.components = components;
  c.bytes.assign(size() * components * scalar_size(type), 0);
  attributes.push_back(std::move(c));
  return attributes.back();
}

void validate_column(const AttributeColumn& c, std::size_t count, const std::string& where) {
  const std::size_t value_bytes = scalar_size(c.type);
  if (c.is_list) {
    if (c.offsets.size() != count + 1 || c.offsets.front() != 0)
      throw DataError(where + ": list '" + c.name + "' has " + std::to_string(c.offsets.size()) + " offsets for " +
                      std::to_string(count) + " items");
    for (std::size_t i = 0; i < count; ++i)
      if (c.offsets[i + 1] < c.offsets[i]) throw DataError(where + ": list '" + c.name + "' offsets decrease");
    if (c.bytes.size() != c.offsets.back() * value_bytes)
      throw DataError(where + ": list '" + c.name + "' holds " + std::to_string(c.bytes.size()) +
                      " bytes, its offsets need " + std::to_string(c.offsets.back() * value_bytes));
    return;
  }
  if (c.components < 1) throw DataError(where + ": column '" + c.name + "' has no components");
  if (c.bytes.size() != count * c.components * value_bytes)
    throw DataError(where + ": column '" + c.name + "' holds " + std::to_string(c.bytes.size()) + " bytes for " +
                    std::to_string(count) + " items");
}

void PointCloud::validate() const {
  const std::string where = meta.source.empty() ? std::string("point cloud") : meta.source;
  if (xyz.size() % 3 != 0) throw DataError(where + ": positions are not a multiple of 3 floats");
  for (const auto& a : attributes) validate_column(a, size(), where);
  for (const auto& e : elements)
    for (const auto& p : e.properties) validate_column(p, e.count, where + ": element '" + e.name + "'");
}

}  // namespace s3d
