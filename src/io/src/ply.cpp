#include "s3d/io/ply.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "byte_order.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

using detail::host_is_little_endian;

struct Property {
  std::string name;
  std::string type;
  int bytes = 0;
};

int type_bytes(const std::string& t) {
  if (t == "char" || t == "uchar" || t == "int8" || t == "uint8") return 1;
  if (t == "short" || t == "ushort" || t == "int16" || t == "uint16") return 2;
  if (t == "int" || t == "uint" || t == "int32" || t == "uint32" || t == "float" || t == "float32") return 4;
  if (t == "double" || t == "float64") return 8;
  return 0;
}

double decode(const unsigned char* p, const std::string& t, bool swap) {
  unsigned char b[8];
  const int n = type_bytes(t);
  for (int i = 0; i < n; ++i) b[i] = swap ? p[n - 1 - i] : p[i];
  if (t == "char" || t == "int8") return static_cast<std::int8_t>(b[0]);
  if (t == "uchar" || t == "uint8") return b[0];
  if (t == "short" || t == "int16") { std::int16_t v; std::memcpy(&v, b, 2); return v; }
  if (t == "ushort" || t == "uint16") { std::uint16_t v; std::memcpy(&v, b, 2); return v; }
  if (t == "int" || t == "int32") { std::int32_t v; std::memcpy(&v, b, 4); return v; }
  if (t == "uint" || t == "uint32") { std::uint32_t v; std::memcpy(&v, b, 4); return v; }
  if (t == "float" || t == "float32") { float v; std::memcpy(&v, b, 4); return v; }
  double v;
  std::memcpy(&v, b, 8);
  return v;
}

}  // namespace

PointCloud cloud_from_disparity(const ImageF& disparity, const StereoCalibration& calib, const ImageU8* colour,
                                float max_depth_m) {
  if (colour && (colour->width != disparity.width || colour->height != disparity.height))
    throw DataError("colour image is " + std::to_string(colour->width) + "x" + std::to_string(colour->height) +
                    " but the disparity map is " + std::to_string(disparity.width) + "x" + std::to_string(disparity.height));
  const double cx = calib.has_principal_point ? calib.cx : (disparity.width - 1) * 0.5;
  const double cy = calib.has_principal_point ? calib.cy : (disparity.height - 1) * 0.5;
  PointCloud cloud;
  for (int y = 0; y < disparity.height; ++y)
    for (int x = 0; x < disparity.width; ++x) {
      const float z = calib.depth(disparity.at(x, y));
      if (!std::isfinite(z) || z > max_depth_m) continue;
      const double zf = z / calib.focal_px;
      cloud.xyz.push_back(static_cast<float>((x - cx) * zf));
      cloud.xyz.push_back(static_cast<float>((y - cy) * zf));
      cloud.xyz.push_back(z);
      for (int c = 0; c < 3; ++c)
        cloud.rgb.push_back(colour ? colour->at(x, y, colour->channels == 3 ? c : 0) : std::uint8_t{255});
    }
  return cloud;
}

void write_ply(const std::string& path, const PointCloud& cloud, PlyFormat format) {
  const bool coloured = !cloud.rgb.empty();
  if (coloured && cloud.rgb.size() != cloud.xyz.size()) throw InvalidArgument(path + ": colour count differs from point count");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError(path + ": cannot open for writing");
  const bool binary = format == PlyFormat::kBinaryLittleEndian;
  out << "ply\nformat " << (binary ? "binary_little_endian" : "ascii") << " 1.0\n"
      << "comment s3d point cloud (camera frame: x right, y down, z forward; metres)\n"
      << "element vertex " << cloud.size() << "\n"
      << "property float x\nproperty float y\nproperty float z\n";
  if (coloured) out << "property uchar red\nproperty uchar green\nproperty uchar blue\n";
  out << "end_header\n";
  const std::size_t n = cloud.size();
  if (binary) {
    const std::size_t stride = 12 + (coloured ? 3 : 0);
    std::vector<unsigned char> buf(stride * std::min<std::size_t>(n, 65536));
    for (std::size_t start = 0; start < n; start += 65536) {
      const std::size_t count = std::min<std::size_t>(65536, n - start);
      for (std::size_t k = 0; k < count; ++k) {
        unsigned char* p = buf.data() + k * stride;
        for (int c = 0; c < 3; ++c) {
          float v = cloud.xyz[(start + k) * 3 + c];
          unsigned char b[4];
          std::memcpy(b, &v, 4);
          if (!host_is_little_endian()) std::swap(b[0], b[3]), std::swap(b[1], b[2]);
          std::memcpy(p + 4 * c, b, 4);
        }
        if (coloured) std::memcpy(p + 12, cloud.rgb.data() + (start + k) * 3, 3);
      }
      out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(count * stride));
    }
  } else {
    out.precision(9);
    for (std::size_t i = 0; i < n; ++i) {
      out << cloud.xyz[i * 3] << ' ' << cloud.xyz[i * 3 + 1] << ' ' << cloud.xyz[i * 3 + 2];
      if (coloured)
        out << ' ' << int(cloud.rgb[i * 3]) << ' ' << int(cloud.rgb[i * 3 + 1]) << ' ' << int(cloud.rgb[i * 3 + 2]);
      out << '\n';
    }
  }
  out.flush();
  if (!out) throw IoError(path + ": write failed");
}

PointCloud read_ply(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open");
  std::string line;
  if (!std::getline(in, line) || line.rfind("ply", 0) != 0) throw IoError(path + ": not a PLY file");
  std::string fmt;
  struct Element {
    std::string name;
    std::size_t count = 0;
    std::vector<Property> props;
    bool has_list = false;
  };
  std::vector<Element> elements;
  bool ended = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream ls(line);
    std::string kw;
    ls >> kw;
    if (kw == "format") ls >> fmt;
    else if (kw == "element") {
      Element e;
      ls >> e.name >> e.count;
      elements.push_back(e);
    } else if (kw == "property") {
      if (elements.empty()) throw IoError(path + ": property before element");
      std::string t;
      ls >> t;
      if (t == "list") {
        elements.back().has_list = true;
        continue;
      }
      Property p;
      p.type = t;
      ls >> p.name;
      p.bytes = type_bytes(t);
      if (p.bytes == 0) throw IoError(path + ": unknown PLY type '" + t + "'");
      elements.back().props.push_back(p);
    } else if (kw == "end_header") {
      ended = true;
      break;
    }
  }
  if (!ended) throw IoError(path + ": PLY header without end_header");
  if (fmt != "ascii" && fmt != "binary_little_endian" && fmt != "binary_big_endian")
    throw IoError(path + ": unknown PLY format '" + fmt + "'");
  PointCloud cloud;
  for (const Element& e : elements) {
    if (e.name != "vertex") {
      if (e.count == 0) continue;
      break;  // elements after the vertices (faces) are not needed; ones before them are not supported
    }
    if (e.has_list) throw IoError(path + ": list properties in the vertex element are not supported");
    int ix = -1, iy = -1, iz = -1, ir = -1, ig = -1, ib = -1;
    for (int k = 0; k < static_cast<int>(e.props.size()); ++k) {
      const std::string& n = e.props[k].name;
      if (n == "x") ix = k;
      else if (n == "y") iy = k;
      else if (n == "z") iz = k;
      else if (n == "red" || n == "r") ir = k;
      else if (n == "green" || n == "g") ig = k;
      else if (n == "blue" || n == "b") ib = k;
    }
    if (ix < 0 || iy < 0 || iz < 0) throw DataError(path + ": PLY vertices without x, y, z");
    const bool coloured = ir >= 0 && ig >= 0 && ib >= 0;
    cloud.xyz.resize(e.count * 3);
    if (coloured) cloud.rgb.resize(e.count * 3);
    std::vector<double> vals(e.props.size());
    std::size_t stride = 0;
    for (const auto& p : e.props) stride += p.bytes;
    std::vector<unsigned char> rec(stride);
    const bool swap = (fmt == "binary_big_endian") == host_is_little_endian();
    for (std::size_t i = 0; i < e.count; ++i) {
      if (fmt == "ascii") {
        for (double& v : vals)
          if (!(in >> v)) throw IoError(path + ": truncated PLY data at vertex " + std::to_string(i));
      } else {
        if (!in.read(reinterpret_cast<char*>(rec.data()), static_cast<std::streamsize>(stride)))
          throw IoError(path + ": truncated PLY data at vertex " + std::to_string(i));
        std::size_t off = 0;
        for (std::size_t k = 0; k < e.props.size(); ++k) {
          vals[k] = decode(rec.data() + off, e.props[k].type, swap);
          off += e.props[k].bytes;
        }
      }
      cloud.xyz[i * 3] = static_cast<float>(vals[ix]);
      cloud.xyz[i * 3 + 1] = static_cast<float>(vals[iy]);
      cloud.xyz[i * 3 + 2] = static_cast<float>(vals[iz]);
      if (coloured) {
        cloud.rgb[i * 3] = static_cast<std::uint8_t>(vals[ir]);
        cloud.rgb[i * 3 + 1] = static_cast<std::uint8_t>(vals[ig]);
        cloud.rgb[i * 3 + 2] = static_cast<std::uint8_t>(vals[ib]);
      }
    }
    return cloud;
  }
  throw DataError(path + ": PLY file without a vertex element first");
}

}  // namespace s3d::io
