#pragma once
// Synthetic box sets for the NMS benchmarks (shared by bench_nms and bench_nms_cpu; the torchvision script
// reads the exact same inputs from the files bench_nms writes).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace s3d::detection::bench {

struct Boxes {
  std::vector<float> xyxy, scores;
  std::vector<std::int64_t> groups;  // empty = one group
};

/// Clustered (jittered copies around random centres, 20 per cluster, as detector outputs) or uniform boxes.
/// The canvas grows with sqrt(n) so that density stays that of 10k boxes on a 1000x1000 image.
inline Boxes generate(std::int64_t n, bool clustered, int classes, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u01(0.f, 1.f);
  std::normal_distribution<float> g(0.f, 1.f);
  const float canvas = 1000.f * std::sqrt(static_cast<float>(n) / 10000.f);
  Boxes b;
  b.xyxy.reserve(static_cast<std::size_t>(n) * 4);
  b.scores.reserve(static_cast<std::size_t>(n));
  float cx = 0, cy = 0, w = 0, h = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    float x, y, bw, bh;
    if (clustered) {
      if (i % 20 == 0) {
        cx = u01(rng) * canvas;
        cy = u01(rng) * canvas;
        w = 10.f + u01(rng) * 70.f;
        h = 10.f + u01(rng) * 70.f;
      }
      x = cx + g(rng) * 0.1f * w;
      y = cy + g(rng) * 0.1f * h;
      bw = w * (1.f + 0.1f * g(rng));
      bh = h * (1.f + 0.1f * g(rng));
    } else {
      x = u01(rng) * canvas;
      y = u01(rng) * canvas;
      bw = 10.f + u01(rng) * 50.f;
      bh = 10.f + u01(rng) * 50.f;
    }
    b.xyxy.insert(b.xyxy.end(), {x - bw / 2, y - bh / 2, x + bw / 2, y + bh / 2});
    b.scores.push_back(u01(rng));
    if (classes > 1) b.groups.push_back(static_cast<std::int64_t>(rng() % classes));
  }
  return b;
}

}  // namespace s3d::detection::bench
