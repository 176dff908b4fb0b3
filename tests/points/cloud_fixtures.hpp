#pragma once
// Clouds for the points tests: synthetic ones with the cases that break published kernels (ties, duplicates,
// odd sizes) and the real scans of ../shared/data read without s3d::io (the GPU build has no OpenCV/PCL).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace s3d::test {

inline std::vector<float> uniform_cloud(std::size_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, scale);
  std::vector<float> xyz(3 * n);
  for (float& v : xyz) v = u(rng);
  return xyz;
}

/// An integer lattice nx x ny x nz (spacing 1): every distance is tied many times over.
inline std::vector<float> lattice(int nx, int ny, int nz) {
  std::vector<float> xyz;
  for (int z = 0; z < nz; ++z)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) xyz.insert(xyz.end(), {float(x), float(y), float(z)});
  return xyz;
}

/// `n` points drawn from only `distinct` positions (duplicates everywhere).
inline std::vector<float> duplicates(std::size_t n, std::size_t distinct, unsigned seed) {
  const std::vector<float> base = uniform_cloud(distinct, seed);
  std::mt19937 rng(seed + 1);
  std::vector<float> xyz(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = rng() % distinct;
    std::memcpy(&xyz[3 * i], &base[3 * j], 3 * sizeof(float));
  }
  return xyz;
}

/// KITTI Velodyne .bin: float32 x y z reflectance per point; returns x y z.
inline std::vector<float> read_kitti_bin(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> raw((std::filesystem::file_size(path)) / sizeof(float));
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size() * sizeof(float)));
  std::vector<float> xyz;
  for (std::size_t i = 0; i + 3 < raw.size(); i += 4) xyz.insert(xyz.end(), {raw[i], raw[i + 1], raw[i + 2]});
  return xyz;
}

/// A binary little-endian PLY whose vertex element starts with float x, y, z (the aerial scan); other vertex
/// properties are skipped by their sizes.
inline std::vector<float> read_binary_ply_xyz(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::size_t vertices = 0, record = 0;
  while (std::getline(in, line) && line != "end_header") {
    std::istringstream words(line);
    std::string a, b, c;
    words >> a >> b >> c;
    if (a == "element" && b == "vertex") vertices = std::stoul(c);
    if (a == "property") {
      if (b == "float" || b == "float32" || b == "int" || b == "uint" || b == "int32" || b == "uint32")
        record += 4;
      else if (b == "double" || b == "float64")
        record += 8;
      else if (b == "short" || b == "ushort" || b == "int16" || b == "uint16")
        record += 2;
      else
        record += 1;
    }
  }
  std::vector<char> bytes(vertices * record);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::vector<float> xyz(3 * vertices);
  for (std::size_t i = 0; i < vertices; ++i) std::memcpy(&xyz[3 * i], &bytes[i * record], 3 * sizeof(float));
  return xyz;
}

/// An ASCII PLY's first three vertex properties (x y z), as float (the Stanford bunny).
inline std::vector<float> read_ascii_ply_xyz(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::size_t vertices = 0;
  while (std::getline(in, line) && line.rfind("end_header", 0) != 0) {
    std::istringstream words(line);
    std::string a, b, c;
    words >> a >> b >> c;
    if (a == "element" && b == "vertex") vertices = std::stoul(c);
  }
  std::vector<float> xyz(3 * vertices);
  for (std::size_t i = 0; i < vertices && std::getline(in, line); ++i) {
    const char* at = line.c_str();
    char* end = nullptr;
    for (int a = 0; a < 3; ++a, at = end) xyz[3 * i + a] = std::strtof(at, &end);
  }
  return xyz;
}

}  // namespace s3d::test
