// icp-fuse's flag values that are more than a number or a word: sizes, frame ranges, inline intrinsics, the
// depth noise model.
#include "flag_values.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "../common/tool_files.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::icp_fuse {
namespace {

std::size_t parse_index(const std::string& text, const std::string& what) {
  // 18 digits: below 2^63, so stoull cannot overflow; no sequence comes near.
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 18)
    throw InvalidArgument("`" + what + "` is not a frame range A:B with whole frame numbers A < B (below 10^18)");
  return static_cast<std::size_t>(std::stoull(text));
}

}  // namespace

void parse_frame_range(const std::string& text, std::size_t* first, std::size_t* last) {
  *first = 0;
  *last = std::numeric_limits<std::size_t>::max();
  if (text.empty()) return;
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw InvalidArgument("`" + text + "` is not a frame range A:B (e.g. 0:300, 100:)");
  const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
  if (!a.empty()) *first = parse_index(a, text);
  if (!b.empty()) *last = parse_index(b, text);
  if (*first >= *last) throw InvalidArgument("frame range `" + text + "` is empty (A must be < B)");
}

std::optional<fusion::CameraIntrinsics> parse_inline_intrinsics(const std::string& spec) {
  std::string t = spec;
  for (char& c : t)
    if (c == ',') c = ' ';
  std::istringstream in(t);
  double v[4];
  std::string rest;
  if (!(in >> v[0] >> v[1] >> v[2] >> v[3]) || (in >> rest)) return std::nullopt;
  for (double x : v)
    if (!std::isfinite(x) || std::fabs(x) > 1e6)
      throw InvalidArgument("--intrinsics: `" + spec + "`: every value must be finite, within 10^6 pixels");
  if (!(v[0] > 0.0) || v[1] == 0.0)
    throw InvalidArgument("--intrinsics: `" + spec + "`: fx must be > 0 and fy non-zero");
  return fusion::CameraIntrinsics{static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2]),
                                  static_cast<float>(v[3])};
}

std::int64_t parse_bytes(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  double unit = 1.0;
  const std::string suffix = end ? std::string(end) : std::string();
  if (suffix == "K" || suffix == "k")
    unit = 1024.0;
  else if (suffix == "M")
    unit = 1024.0 * 1024.0;
  else if (suffix == "G")
    unit = 1024.0 * 1024.0 * 1024.0;
  else if (!suffix.empty())
    unit = -1.0;
  const double bytes = v * unit;
  if (text.empty() || unit < 0.0 || !(bytes >= 1.0 && bytes <= 1099511627776.0))
    throw InvalidArgument("--max-memory: `" + text + "` is not a size in bytes up to 1T (a number with K, M or G)");
  return static_cast<std::int64_t>(bytes);
}

fusion::DepthNoise parse_depth_noise(const std::string& spec) {
  fusion::DepthNoise noise;
  if (spec == "kinect") return noise;
  const std::string prefix = "stereo:";
  const auto fail = [&] {
    return InvalidArgument("--depth-noise: `" + spec +
                           "` is not kinect or stereo:BASELINE_M[,DISPARITY_SIGMA_PX] (e.g. stereo:0.5372 or "
                           "stereo:0.12,0.5; baseline in (0, 1000] m, sigma in (0, 1000] px)");
  };
  if (spec.compare(0, prefix.size(), prefix) != 0) throw fail();
  const auto parts = apps::split_list(spec.substr(prefix.size()));
  if (parts.empty() || parts.size() > 2) throw fail();
  double v[2] = {0.0, double(noise.disparity_sigma)};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    char* end = nullptr;
    v[i] = std::strtod(parts[i].c_str(), &end);
    if (parts[i].empty() || !end || *end != '\0' || !(v[i] > 0.0 && v[i] <= 1e3)) throw fail();
  }
  noise.kind = fusion::DepthNoise::Kind::kStereo;
  noise.baseline = static_cast<float>(v[0]);
  noise.disparity_sigma = static_cast<float>(v[1]);
  return noise;
}

}  // namespace s3d::icp_fuse
