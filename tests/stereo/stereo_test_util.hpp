#pragma once
// Helpers for the stereo tests: random images, synthetic shifted pairs, raw PGM reading, naive references.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "s3d/core/views.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::test {

template <typename T>
struct Image {
  int width = 0, height = 0;
  std::vector<T> pixels;
  ImageView<const T> view() const { return {pixels.data(), width, height, width}; }
};

/// Random texture, smoothed a little so matching is meaningful (values span the type's range / `scale`).
template <typename T>
Image<T> random_image(int w, int h, std::uint32_t seed, int max_value = 255) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, max_value);
  Image<T> im{w, h, std::vector<T>(static_cast<std::size_t>(w) * h)};
  for (auto& p : im.pixels) p = static_cast<T>(dist(rng));
  return im;
}

/// A pair whose left view is the right view shifted by `disparity` pixels (left(x) = right(x - d)).
inline void shifted_pair(int w, int h, int disparity, std::uint32_t seed, Image<std::uint8_t>& left,
                         Image<std::uint8_t>& right) {
  const int pad = 2 * (disparity < 0 ? -disparity : disparity) + 2;
  Image<std::uint8_t> base = random_image<std::uint8_t>(w + pad, h, seed);
  left = {w, h, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h)};
  right = left;
  const int off = pad / 2;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      right.pixels[y * w + x] = base.pixels[y * (w + pad) + x + off];
      left.pixels[y * w + x] = base.pixels[y * (w + pad) + x + off - disparity];
    }
}

/// Reads a binary 8-bit PGM (P5). Returns false when absent or malformed.
inline bool read_pgm(const std::string& path, Image<std::uint8_t>& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::string magic;
  int w = 0, h = 0, maxv = 0;
  f >> magic >> w >> h >> maxv;
  if (magic != "P5" || w <= 0 || h <= 0 || maxv != 255) return false;
  f.get();
  out.width = w;
  out.height = h;
  out.pixels.resize(static_cast<std::size_t>(w) * h);
  f.read(reinterpret_cast<char*>(out.pixels.data()), static_cast<std::streamsize>(out.pixels.size()));
  return static_cast<bool>(f);
}

/// Bitwise equality of two float maps (inf == inf), with the first mismatch in `where`.
inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b, int width, std::string* where) {
  if (a.size() != b.size()) {
    if (where) *where = "sizes differ";
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::uint32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    if (ua != ub) {
      if (where)
        *where = "x=" + std::to_string(i % width) + " y=" + std::to_string(i / width) + ": " + std::to_string(a[i]) +
                 " vs " + std::to_string(b[i]);
      return false;
    }
  }
  return true;
}

}  // namespace s3d::test
