// SgmParams validation and census parsing.
#include <cmath>
#include <string>

#include "backend.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::stereo {
namespace {

[[noreturn]] void bad(const std::string& message) { throw InvalidArgument(message); }

std::string num(double v) {
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

void parse_census(const std::string& text, CensusKind& kind, int& width, int& height) {
  std::string t = text;
  CensusKind k = CensusKind::kFull;
  if (t.rfind("cs", 0) == 0) {
    k = CensusKind::kCenterSymmetric;
    t = t.substr(2);
  }
  const auto xpos = t.find('x');
  int w = 0, h = 0;
  try {
    if (xpos == std::string::npos || xpos == 0 || xpos + 1 >= t.size()) throw std::invalid_argument("x");
    std::size_t used = 0;
    w = std::stoi(t.substr(0, xpos), &used);
    if (used != xpos) throw std::invalid_argument("w");
    const std::string hs = t.substr(xpos + 1);
    h = std::stoi(hs, &used);
    if (used != hs.size()) throw std::invalid_argument("h");
  } catch (const std::exception&) {
    bad("census: '" + text + "' is not WxH or csWxH (e.g. 9x7, cs9x7)");
  }
  if (w < 1 || w > 9 || h < 1 || h > 7 || w % 2 == 0 || h % 2 == 0 || w * h < 3)
    bad("census: '" + text + "' needs an odd width <= 9 and an odd height <= 7");
  kind = k;
  width = w;
  height = h;
}

LrMethod parse_lr_method(const std::string& text) {
  if (text == "volume") return LrMethod::kVolume;
  if (text == "right-sgm") return LrMethod::kRightSgm;
  bad("lr_method: '" + text + "' is not volume or right-sgm");
}

const char* lr_method_name(LrMethod method) { return method == LrMethod::kVolume ? "volume" : "right-sgm"; }

int SgmParams::census_bits() const {
  const int n = census_width * census_height;
  return census == CensusKind::kFull ? n - 1 : (n - 1) / 2;
}

void SgmParams::validate() const {
  if (disparities < 16 || disparities > 1024)
    bad("disparities (" + std::to_string(disparities) + ") must be in [16, 1024]");
  if (paths != 4 && paths != 8) bad("paths (" + std::to_string(paths) + ") must be 4 or 8");
  if (census_width < 1 || census_width > 9 || census_width % 2 == 0)
    bad("census_width (" + std::to_string(census_width) + ") must be odd and <= 9");
  if (census_height < 1 || census_height > 7 || census_height % 2 == 0)
    bad("census_height (" + std::to_string(census_height) + ") must be odd and <= 7");
  if (census_bits() < 1)
    bad("census window " + std::to_string(census_width) + "x" + std::to_string(census_height) + " has no bits");
  if (p1 < 0) bad("p1 (" + std::to_string(p1) + ") must be >= 0");
  if (p2 <= p1) bad("p2 (" + std::to_string(p2) + ") must be > p1 (" + std::to_string(p1) + ")");
  const long long bound = static_cast<long long>(paths) * (census_bits() + p2);
  if (bound > kMaxAggregatedCost)
    bad("p2 (" + std::to_string(p2) + ") too large: paths * (census bits + p2) = " + std::to_string(bound) +
        " overflows the 16-bit aggregated cost (max " + std::to_string(kMaxAggregatedCost) + ")");
  if (uniqueness < 0 || uniqueness > 99) bad("uniqueness (" + std::to_string(uniqueness) + ") must be in [0, 99]");
  if (lr_method != LrMethod::kVolume && lr_method != LrMethod::kRightSgm)
    bad("lr_method (" + std::to_string(static_cast<int>(lr_method)) + ") is not volume or right-sgm");
  if (!(lr_max_diff >= 0.0f) || !std::isfinite(lr_max_diff))
    bad("lr_max_diff (" + num(lr_max_diff) + ") must be a finite number >= 0");
  if (speckle_size < 0) bad("speckle_size (" + std::to_string(speckle_size) + ") must be >= 0");
  if (!(speckle_range >= 0.0f) || !std::isfinite(speckle_range))
    bad("speckle_range (" + num(speckle_range) + ") must be a finite number >= 0");
}

void SgmParams::validate(int width, int height) const {
  validate();
  if (width < census_width || height < census_height || width < 2 || height < 2)
    bad("image size " + std::to_string(width) + "x" + std::to_string(height) + " is smaller than the census window " +
        std::to_string(census_width) + "x" + std::to_string(census_height));
  if (static_cast<long long>(width) * height > (1LL << 26))  // 32-bit thread indices of the CUDA WTA (32 per pixel)
    bad("image size " + std::to_string(width) + "x" + std::to_string(height) + " is too large (max 2^26 = 67M pixels)");
  if (disparities > width)
    bad("disparities (" + std::to_string(disparities) + ") too large for the image width (" + std::to_string(width) +
        ")");
  if (min_disparity >= width || min_disparity + disparities - 1 <= -width)
    bad("min_disparity (" + std::to_string(min_disparity) + ") leaves no disparity inside the image width (" +
        std::to_string(width) + ")");
}

namespace detail {
MatchSpec make_match_spec(const SgmParams& p, int width, int height, bool right_view) {
  MatchSpec s;
  s.width = width;
  s.height = height;
  s.disparities = p.disparities;
  s.min_disparity = p.min_disparity;
  s.sign = right_view ? 1 : -1;
  s.max_cost = p.census_bits();
  s.paths = p.paths;
  s.p1 = p.p1;
  s.p2 = p.p2;
  s.uniqueness = p.uniqueness;
  s.subpixel = p.subpixel;
  s.right_edge = p.census_width / 2;
  return s;
}
}  // namespace detail

}  // namespace s3d::stereo
