#include "s3d/io/image.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "png_decode.hpp"
#include "png_grey_fast.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/pfm.hpp"
#include "s3d/io/stereo_datasets.hpp"

namespace s3d::io {
namespace {

// IMREAD_UNCHANGED keeps 16 bits; palette PNGs come back as BGR. We convert colour ourselves so the
// BT.601 weights are those of cvtColor, whatever the codec would do under IMREAD_GRAYSCALE.
cv::Mat checked(const cv::Mat& m, const std::string& path) {
  if (m.empty()) throw IoError(path + ": cannot read image (unreadable or not an image format OpenCV knows)");
  if (m.depth() != CV_8U && m.depth() != CV_16U)
    throw IoError(path + ": unsupported sample type (only 8- and 16-bit integer images)");
  return m;
}

// Deflate never shrinks data more than 1032:1, so a PNG whose header promises more pixel bytes than its size
// allows is refused before OpenCV allocates the image (a 200-byte file asking for 30000x30000 RGBA16: 7 GB).
constexpr std::uint64_t kDeflateMaxRatio = 1100;

void check_png_size(const std::uint8_t* head, std::size_t head_size, std::uint64_t file_size, const std::string& name) {
  static const std::uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (head_size < 26 || std::memcmp(head, kSignature, 8) != 0 || std::memcmp(head + 12, "IHDR", 4) != 0) return;
  auto be32 = [&](std::size_t at) {
    return std::uint64_t{head[at]} << 24 | std::uint64_t{head[at + 1]} << 16 | std::uint64_t{head[at + 2]} << 8 |
           head[at + 3];
  };
  const std::uint64_t width = be32(16), height = be32(20), bit_depth = head[24];
  const int colour_type = head[25];
  const std::uint64_t samples = colour_type == 2 ? 3 : colour_type == 4 ? 2 : colour_type == 6 ? 4 : 1;
  if (width > (1u << 24) || height > (1u << 24) || bit_depth > 16) return;  // libpng refuses these itself
  const std::uint64_t pixel_bytes = (width * height * samples * bit_depth + 7) / 8;
  if (pixel_bytes > kDeflateMaxRatio * file_size)
    throw IoError(name + ": PNG header says " + std::to_string(width) + "x" + std::to_string(height) +
                  " pixels, more than its " + std::to_string(file_size) + " bytes can hold (corrupt)");
}

// Every failure reaches the caller as one exception, one line: OpenCV's own log lines (`[ WARN:0@0.1]
// imread_(...)`) would be a second line on stderr, printed even under -q.
void silence_opencv_log() {
  static const bool silenced = [] {
    cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
    return true;
  }();
  (void)silenced;
}

/// DICOM's signature: "DICM" at byte 128 (OpenCV hands such bytes to GDCM, whose reader aborts the process on
/// malformed data: found by fuzzing). Not an image format of this toolkit.
bool is_dicom(const std::vector<std::uint8_t>& bytes) {
  return bytes.size() >= 132 && bytes[128] == 'D' && bytes[129] == 'I' && bytes[130] == 'C' && bytes[131] == 'M';
}

cv::Mat decode(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  check_png_size(bytes.data(), bytes.size(), bytes.size(), name);
  if (detail::is_png(bytes)) return checked(detail::decode_png(bytes, name), name);
  if (is_dicom(bytes)) throw IoError(name + ": DICOM data (\"DICM\" at byte 128) is not a supported image format");
  silence_opencv_log();
  cv::Mat m;
  try {
    if (!bytes.empty())
      m = cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<std::uint8_t*>(bytes.data())),
                       cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    throw IoError(name + ": cannot decode image: " + e.msg);
  }
  return checked(m, name);
}

// The same decoder as for bytes already in memory (decode_grey16): one path, one set of messages.
cv::Mat load(const std::string& path) { return decode(read_file_bytes(path), path); }

cv::Mat to_grey(const cv::Mat& m) {
  cv::Mat g;
  switch (m.channels()) {
    case 1:
      g = m;
      break;
    case 3:
      cv::cvtColor(m, g, cv::COLOR_BGR2GRAY);
      break;
    case 4:
      cv::cvtColor(m, g, cv::COLOR_BGRA2GRAY);
      break;
    default:
      g = cv::Mat();
      break;
  }
  return g;
}

template <typename T>
Image<T> from_mat(const cv::Mat& m) {
  Image<T> out(m.cols, m.rows, m.channels());
  const std::size_t row_bytes = static_cast<std::size_t>(m.cols) * m.channels() * sizeof(T);
  for (int y = 0; y < m.rows; ++y)
    std::memcpy(out.data.data() + static_cast<std::size_t>(y) * m.cols * m.channels(), m.ptr(y), row_bytes);
  return out;
}

void write_mat(const std::string& path, const cv::Mat& m) {
  bool ok = false;
  try {
    ok = cv::imwrite(path, m);
  } catch (const cv::Exception& e) {
    throw IoError(path + ": cannot write image: " + e.msg);
  }
  if (!ok) throw IoError(path + ": cannot write image");
}

std::string lower_ext(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

ImageInfo probe_image(const std::string& path) {
  const cv::Mat m = load(path);
  return ImageInfo{m.cols, m.rows, m.channels(), m.depth() == CV_16U ? 16 : 8};
}

ImageU8 read_grey8(const std::string& path) {
  GreyImage g = decode_grey(read_file_bytes(path), path);
  if (g.bit_depth == 8) return std::move(g.eight);
  ImageU8 high(g.sixteen.width, g.sixteen.height);
  std::transform(g.sixteen.data.begin(), g.sixteen.data.end(), high.data.begin(),
                 [](std::uint16_t v) { return static_cast<std::uint8_t>(v >> 8); });
  return high;
}

ImageU16 read_grey16(const std::string& path, int* bit_depth) {
  return decode_grey16(read_file_bytes(path), path, bit_depth);
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::error_code ec;  // a path the OS refuses (longer than NAME_MAX) is "no such file" too, not filesystem_error
  if (!std::filesystem::exists(path, ec)) throw IoError(path + ": no such file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw IoError(path + ": cannot open");
  // One read of the whole file: a byte-wise stream iterator is ten times slower, and reading is on the
  // critical path of a batch (the frame's load stage).
  const std::streamoff size = in.tellg();
  if (size < 0) throw IoError(path + ": cannot tell its size");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) throw IoError(path + ": read failed");
  return bytes;
}

GreyImage decode_grey(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  check_png_size(bytes.data(), bytes.size(), bytes.size(), name);
  if (detail::is_png(bytes)) {
    GreyImage fast = detail::decode_png_grey_fast(bytes.data(), bytes.size());
    if (fast.bit_depth != 0) return fast;
  }
  const cv::Mat g = to_grey(decode(bytes, name));
  if (g.empty()) throw IoError(name + ": unsupported channel count");
  GreyImage out;
  out.bit_depth = g.depth() == CV_16U ? 16 : 8;
  if (out.bit_depth == 8)
    out.eight = from_mat<std::uint8_t>(g);
  else
    out.sixteen = from_mat<std::uint16_t>(g);
  return out;
}

ImageU16 decode_grey16(const std::vector<std::uint8_t>& bytes, const std::string& name, int* bit_depth) {
  GreyImage g = decode_grey(bytes, name);
  if (bit_depth) *bit_depth = g.bit_depth;
  return grey16_of(std::move(g));
}

ImageU16 grey16_of(GreyImage&& grey) {
  if (grey.bit_depth == 16) return std::move(grey.sixteen);
  ImageU16 wide(grey.eight.width, grey.eight.height);
  std::copy(grey.eight.data.begin(), grey.eight.data.end(), wide.data.begin());
  return wide;
}

ImageU8 read_rgb8(const std::string& path) {
  cv::Mat m = load(path);
  if (m.depth() == CV_16U) m.convertTo(m, CV_8U, 1.0 / 256.0);
  cv::Mat rgb;
  switch (m.channels()) {
    case 1:
      cv::cvtColor(m, rgb, cv::COLOR_GRAY2RGB);
      break;
    case 3:
      cv::cvtColor(m, rgb, cv::COLOR_BGR2RGB);
      break;
    case 4:
      cv::cvtColor(m, rgb, cv::COLOR_BGRA2RGB);
      break;
    default:
      throw IoError(path + ": unsupported channel count");
  }
  return from_mat<std::uint8_t>(rgb);
}

std::vector<std::uint8_t> read_mask(const std::string& path, int* width, int* height, int on_value) {
  cv::Mat g = to_grey(load(path));
  if (g.empty() || g.depth() != CV_8U) throw DataError(path + ": a mask must be an 8-bit image");
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(g.cols) * g.rows);
  for (int y = 0; y < g.rows; ++y)
    for (int x = 0; x < g.cols; ++x)
      mask[static_cast<std::size_t>(y) * g.cols + x] = g.at<std::uint8_t>(y, x) == on_value ? 1 : 0;
  if (width) *width = g.cols;
  if (height) *height = g.rows;
  return mask;
}

void write_image(const std::string& path, const ImageU8& image) {
  int type = 0;
  switch (image.channels) {
    case 1:
      type = CV_8UC1;
      break;
    case 3:
      type = CV_8UC3;
      break;
    case 4:
      type = CV_8UC4;
      break;
    default:
      throw InvalidArgument(path + ": cannot write an image of " + std::to_string(image.channels) + " channels");
  }
  cv::Mat m(image.height, image.width, type, const_cast<std::uint8_t*>(image.data.data()));
  cv::Mat bgr;
  if (image.channels == 3)
    cv::cvtColor(m, bgr, cv::COLOR_RGB2BGR);
  else if (image.channels == 4)
    cv::cvtColor(m, bgr, cv::COLOR_RGBA2BGRA);
  else
    bgr = m;
  write_mat(path, bgr);
}

void write_image(const std::string& path, const ImageU16& image) {
  if (image.channels != 1) throw InvalidArgument(path + ": 16-bit images are written single-channel only");
  cv::Mat m(image.height, image.width, CV_16UC1, const_cast<std::uint16_t*>(image.data.data()));
  write_mat(path, m);
}

PngEncoding parse_png_encoding(const std::string& text) {
  if (text == "kitti") return PngEncoding::kKitti;
  if (text == "x16") return PngEncoding::kX16;
  throw InvalidArgument("unknown disparity PNG encoding '" + text + "' (expected kitti or x16)");
}

const char* to_string(PngEncoding encoding) {
  switch (encoding) {
    case PngEncoding::kKitti:
      return "kitti";
    case PngEncoding::kX16:
      return "x16";
  }
  return "?";
}

namespace {

double scale_of(PngEncoding e) { return e == PngEncoding::kKitti ? 256.0 : 16.0; }

ImageU16 encode_scaled(const ImageF& values, double scale) {
  ImageU16 out(values.width, values.height, 1, 0);
  for (std::size_t i = 0; i < values.pixels(); ++i) {
    const float v = values.data[i * values.channels];
    if (!std::isfinite(v) || v <= 0.0f) continue;
    const double q = std::round(static_cast<double>(v) * scale);
    // Values that would round to 0 or overflow 16 bits cannot be stored: they read back as invalid.
    if (q < 1.0 || q > 65535.0) continue;
    out.data[i] = static_cast<std::uint16_t>(q);
  }
  return out;
}

ImageF decode_scaled(const ImageU16& values, double scale, bool saturated_is_invalid = false) {
  ImageF out(values.width, values.height, 1, kInvalid);
  for (std::size_t i = 0; i < values.pixels(); ++i) {
    const std::uint16_t v = values.data[i * values.channels];
    if (v != 0 && !(saturated_is_invalid && v == 65535)) out.data[i] = static_cast<float>(v / scale);
  }
  return out;
}

void check_depth_scale(double scale) {
  if (!(std::isfinite(scale) && scale > 0.0))
    throw InvalidArgument("depth scale must be a positive number (got " + std::to_string(scale) + ")");
}

}  // namespace

ImageU16 encode_png16(const ImageF& values, PngEncoding encoding) { return encode_scaled(values, scale_of(encoding)); }

ImageF decode_png16(const ImageU16& values, PngEncoding encoding) { return decode_scaled(values, scale_of(encoding)); }

ImageU8 encode_unit_png8(const ImageF& values) {
  ImageU8 out(values.width, values.height);
  for (std::size_t i = 0; i < out.data.size(); ++i)
    out.data[i] = static_cast<std::uint8_t>(std::lround(std::clamp(values.data[i], 0.0f, 1.0f) * 255.0f));
  return out;
}

double parse_depth_scale(const std::string& text) {
  if (text == "mm") return kDepthScaleMm;
  if (text == "tum") return kDepthScaleTum;
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(std::isfinite(v) && v > 0.0))
    throw InvalidArgument("depth scale '" + text + "': expected mm (1000), tum (5000) or a positive number");
  return v;
}

ImageU16 encode_depth_png16(const ImageF& depth_m, double scale) {
  check_depth_scale(scale);
  return encode_scaled(depth_m, scale);
}

ImageF decode_depth_png16(const ImageU16& values, double scale, bool saturated_is_invalid) {
  check_depth_scale(scale);
  return decode_scaled(values, scale, saturated_is_invalid);
}

ImageF read_disparity(const std::string& path, double scale) {
  if (lower_ext(path) == ".pfm") {
    ImageF d = read_pfm(path);
    if (d.channels != 1) throw DataError(path + ": a disparity PFM must have one channel");
    return d;
  }
  const cv::Mat raw = load(path);
  cv::Mat g = to_grey(raw);
  if (g.empty()) throw DataError(path + ": a disparity image must be single-channel");
  if (scale <= 0.0) {
    if (g.depth() == CV_16U) {
      scale = 256.0;
    } else {
      scale = middlebury_gt_scale(path);
      if (scale <= 0.0)
        throw DataError(path +
                        ": 8-bit disparity needs a scale (d = value / scale): give one, or an info.txt beside it");
    }
  }
  ImageF out(g.cols, g.rows, 1, kInvalid);
  for (int y = 0; y < g.rows; ++y)
    for (int x = 0; x < g.cols; ++x) {
      const double v = g.depth() == CV_16U ? g.at<std::uint16_t>(y, x) : g.at<std::uint8_t>(y, x);
      if (v != 0) out.at(x, y) = static_cast<float>(v / scale);
    }
  return out;
}

}  // namespace s3d::io
