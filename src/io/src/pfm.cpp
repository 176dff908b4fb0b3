#include "s3d/io/pfm.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "byte_order.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

using detail::host_is_little_endian;

void byteswap_floats(std::vector<float>& v) {
  for (float& f : v) {
    std::uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    u = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
    std::memcpy(&f, &u, 4);
  }
}

// Reads one whitespace-delimited header token and consumes exactly one whitespace character after it.
std::string token(std::istream& in, const std::string& path) {
  std::string t;
  int c = in.get();
  while (c != EOF && std::isspace(c)) c = in.get();
  while (c != EOF && !std::isspace(c)) {
    t.push_back(static_cast<char>(c));
    if (t.size() > 64) throw IoError(path + ": not a PFM file (bad header)");
    c = in.get();
  }
  if (c == EOF || t.empty()) throw IoError(path + ": not a PFM file (truncated header)");
  return t;
}

}  // namespace

ImageF read_pfm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open");
  const std::string magic = token(in, path);
  int channels = 0;
  if (magic == "Pf")
    channels = 1;
  else if (magic == "PF")
    channels = 3;
  else
    throw IoError(path + ": not a PFM file (magic '" + magic.substr(0, 8) + "')");
  int w = 0, h = 0;
  double scale = 0.0;
  try {
    w = std::stoi(token(in, path));
    h = std::stoi(token(in, path));
    scale = std::stod(token(in, path));
  } catch (const std::logic_error&) {
    throw IoError(path + ": not a PFM file (bad size or scale)");
  }
  if (w <= 0 || h <= 0 || w > (1 << 20) || h > (1 << 20) || scale == 0.0)
    throw IoError(path + ": bad PFM header (" + std::to_string(w) + "x" + std::to_string(h) + ")");
  const bool file_le = scale < 0.0;
  const std::size_t row = static_cast<std::size_t>(w) * channels;
  // The header's size is checked against the bytes that follow before anything is allocated.
  const std::streamoff data_at = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff data_bytes = in.tellg() - data_at;
  in.seekg(data_at);
  if (data_at < 0 || data_bytes < 0 ||
      static_cast<std::uint64_t>(data_bytes) / sizeof(float) / row < static_cast<std::uint64_t>(h))
    throw IoError(path + ": truncated PFM data (" + std::to_string(w) + "x" + std::to_string(h) + "x" +
                  std::to_string(channels) + " floats need " + std::to_string(row * h * sizeof(float)) + " bytes, " +
                  std::to_string(data_bytes < 0 ? 0 : data_bytes) + " follow the header)");
  ImageF img(w, h, channels);
  std::vector<float> buf(row * h);
  in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size() * sizeof(float)));
  if (static_cast<std::size_t>(in.gcount()) != buf.size() * sizeof(float))
    throw IoError(path + ": truncated PFM data (expected " + std::to_string(buf.size() * 4) + " bytes)");
  if (file_le != host_is_little_endian()) byteswap_floats(buf);
  for (int y = 0; y < h; ++y)  // rows are stored bottom to top
    std::memcpy(img.data.data() + static_cast<std::size_t>(y) * row,
                buf.data() + static_cast<std::size_t>(h - 1 - y) * row, row * sizeof(float));
  return img;
}

void write_pfm(const std::string& path, const ImageF& image, bool little_endian) {
  if (image.channels != 1 && image.channels != 3)
    throw InvalidArgument(path + ": PFM holds 1 or 3 channels, not " + std::to_string(image.channels));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError(path + ": cannot open for writing: " + std::strerror(errno));
  out << (image.channels == 1 ? "Pf" : "PF") << '\n'
      << image.width << ' ' << image.height << '\n'
      << (little_endian ? "-1.0" : "1.0") << '\n';
  const std::size_t row = static_cast<std::size_t>(image.width) * image.channels;
  std::vector<float> buf(row);
  for (int y = image.height - 1; y >= 0; --y) {
    std::memcpy(buf.data(), image.data.data() + static_cast<std::size_t>(y) * row, row * sizeof(float));
    if (little_endian != host_is_little_endian()) byteswap_floats(buf);
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(row * sizeof(float)));
  }
  out.flush();
  if (!out) throw io_error_with_reason(path, "write failed");
}

}  // namespace s3d::io
