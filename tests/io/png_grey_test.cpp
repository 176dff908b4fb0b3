// io::decode_grey: PNGs decoded straight to grey (libdeflate, rows unfiltered and converted in one pass) must
// give exactly what OpenCV gives, cv::imdecode(IMREAD_UNCHANGED) then cvtColor(BGR[A]2GRAY), the reference the
// tools documented before the fast path existed. Real files of every kind the data holds (KITTI colour and
// grey, Middlebury, 16-bit disparity and depth PNGs), hand-made files for each filter type, colour type, chunk
// split and odd size, and damaged files, which must fail with the libpng path's own message.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "../../src/io/src/png_grey_fast.hpp"  // which files take the fast path (internal API of s3d::io)
#include "../common/test_support.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"

namespace fs = std::filesystem;
using namespace s3d::io;

namespace {

using Bytes = std::vector<std::uint8_t>;

// The reference: OpenCV's decoder and grey conversion, at the file's depth.
GreyImage opencv_grey(const Bytes& bytes) {
  const cv::Mat m = cv::imdecode(
      cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<std::uint8_t*>(bytes.data())), cv::IMREAD_UNCHANGED);
  EXPECT_FALSE(m.empty());
  cv::Mat g = m;
  if (m.channels() == 3) cv::cvtColor(m, g, cv::COLOR_BGR2GRAY);
  if (m.channels() == 4) cv::cvtColor(m, g, cv::COLOR_BGRA2GRAY);
  GreyImage out;
  out.bit_depth = g.depth() == CV_16U ? 16 : 8;
  if (out.bit_depth == 8) {
    out.eight = ImageU8(g.cols, g.rows);
    for (int y = 0; y < g.rows; ++y) std::memcpy(&out.eight.at(0, y), g.ptr(y), static_cast<std::size_t>(g.cols));
  } else {
    out.sixteen = ImageU16(g.cols, g.rows);
    for (int y = 0; y < g.rows; ++y) std::memcpy(&out.sixteen.at(0, y), g.ptr(y), std::size_t{2} * g.cols);
  }
  return out;
}

void expect_same(const GreyImage& got, const GreyImage& want, const std::string& what) {
  ASSERT_EQ(got.bit_depth, want.bit_depth) << what;
  if (want.bit_depth == 8) {
    ASSERT_EQ(got.eight.width, want.eight.width) << what;
    ASSERT_EQ(got.eight.height, want.eight.height) << what;
    EXPECT_TRUE(got.eight.data == want.eight.data) << what;
  } else {
    ASSERT_EQ(got.sixteen.width, want.sixteen.width) << what;
    ASSERT_EQ(got.sixteen.height, want.sixteen.height) << what;
    EXPECT_TRUE(got.sixteen.data == want.sixteen.data) << what;
  }
}

Bytes file_bytes(const fs::path& p) { return read_file_bytes(p.string()); }

void put32(Bytes& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}

void chunk(Bytes& out, const char* type, const Bytes& data, bool good_crc = true) {
  put32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  std::uint32_t crc = static_cast<std::uint32_t>(crc32(0, out.data() + start, static_cast<uInt>(out.size() - start)));
  put32(out, good_crc ? crc : crc ^ 1u);
}

// A PNG made by hand: `samples` rows of bytes (big-endian for 16 bits), each row filtered with
// `filter_of(y)` (0-4), the zlib stream cut into `idat_parts` IDAT chunks.
struct HandMade {
  int width = 0, height = 0, bit_depth = 8, colour_type = 0;
  std::vector<Bytes> rows;  // unfiltered
  int idat_parts = 1;
  int window_bits = 15;  // zlib's window: 15 = 32 KiB
  bool bad_idat_crc = false;
  int bad_filter_row = -1;  // a filter byte of 5 on that row
  std::vector<std::pair<std::string, Bytes>> before_idat;
};

Bytes filter_row(int filter, const Bytes& row, const Bytes& prior, std::size_t bpp) {
  Bytes out(row.size());
  for (std::size_t i = 0; i < row.size(); ++i) {
    const int a = i >= bpp ? row[i - bpp] : 0, b = prior[i], c = i >= bpp ? prior[i - bpp] : 0;
    int predictor = 0;
    switch (filter) {
      case 1:
        predictor = a;
        break;
      case 2:
        predictor = b;
        break;
      case 3:
        predictor = (a + b) / 2;
        break;
      case 4: {
        const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
        predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
        break;
      }
      default:
        break;
    }
    out[i] = static_cast<std::uint8_t>(row[i] - predictor);
  }
  return out;
}

Bytes encode(const HandMade& h) {
  const std::size_t channels = h.colour_type == 0 ? 1 : h.colour_type == 4 ? 2 : h.colour_type == 2 ? 3 : 4;
  const std::size_t bpp = channels * static_cast<std::size_t>(h.bit_depth / 8);
  Bytes raw;
  Bytes prior(h.rows.empty() ? 0 : h.rows[0].size(), 0);
  for (int y = 0; y < h.height; ++y) {
    const int filter = y % 5;
    raw.push_back(static_cast<std::uint8_t>(y == h.bad_filter_row ? 5 : filter));
    const Bytes f = filter_row(filter, h.rows[y], prior, bpp);
    raw.insert(raw.end(), f.begin(), f.end());
    prior = h.rows[y];
  }
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, h.window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes z(deflateBound(&zs, static_cast<uLong>(raw.size())));
  zs.next_in = raw.data();
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = z.data();
  zs.avail_out = static_cast<uInt>(z.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  z.resize(zs.total_out);
  deflateEnd(&zs);
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put32(ihdr, static_cast<std::uint32_t>(h.width));
  put32(ihdr, static_cast<std::uint32_t>(h.height));
  ihdr.insert(ihdr.end(), {static_cast<std::uint8_t>(h.bit_depth), static_cast<std::uint8_t>(h.colour_type), 0, 0, 0});
  chunk(out, "IHDR", ihdr);
  for (const auto& [type, data] : h.before_idat) chunk(out, type.c_str(), data);
  const std::size_t part = (z.size() + h.idat_parts - 1) / h.idat_parts;
  for (std::size_t at = 0; at < z.size(); at += part)
    chunk(out, "IDAT", Bytes(z.begin() + at, z.begin() + std::min(z.size(), at + part)), !h.bad_idat_crc);
  chunk(out, "IEND", {});
  return out;
}

HandMade random_image(int width, int height, int bit_depth, int colour_type, unsigned seed) {
  HandMade h;
  h.width = width;
  h.height = height;
  h.bit_depth = bit_depth;
  h.colour_type = colour_type;
  const std::size_t channels = colour_type == 0 ? 1 : colour_type == 4 ? 2 : colour_type == 2 ? 3 : 4;
  std::mt19937 rng(seed);
  for (int y = 0; y < height; ++y) {
    Bytes row(static_cast<std::size_t>(width) * channels * (bit_depth / 8));
    for (std::size_t i = 0; i < row.size(); ++i)  // half noise, half smooth ramps: every filter's arithmetic
      row[i] = static_cast<std::uint8_t>(y % 2 ? rng() : (i * 7 + y * 3) & 0xff);
    h.rows.push_back(row);
  }
  return h;
}

}  // namespace

TEST(PngGrey, RealFilesEqualOpenCVsDecodeAndGrey) {
  S3D_REQUIRE_DATA(root, "stereo");
  S3D_REQUIRE_DATA(odometry, "stereo_sequences/kitti_odometry_02_f000-050/image_l/000000.png");
  S3D_REQUIRE_DATA(rgbd, "rgbd");
  std::vector<fs::path> files = {odometry};
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.path().extension() == ".png") files.push_back(entry.path());
  int depth_frames = 0;
  for (const auto& entry : fs::recursive_directory_iterator(rgbd))
    if (entry.path().extension() == ".png" && depth_frames++ < 4) files.push_back(entry.path());
  ASSERT_GE(files.size(), 20u);
  int eight = 0, sixteen = 0;
  for (const fs::path& f : files) {
    const Bytes bytes = file_bytes(f);
    const GreyImage got = decode_grey(bytes, f.string());
    expect_same(got, opencv_grey(bytes), f.string());
    const int fast = s3d::io::detail::decode_png_grey_fast(bytes.data(), bytes.size()).bit_depth;
    EXPECT_TRUE(fast == 0 || fast == got.bit_depth) << f;
    if (fast) (fast == 8 ? eight : sixteen)++;
  }
  // Decoded on the fast path (the rest, e.g. palette masks, through libpng, also compared above):
  EXPECT_GT(eight, 10);   // KITTI colour and grey, Middlebury colour
  EXPECT_GT(sixteen, 2);  // KITTI disparity, depth frames
}

TEST(PngGrey, EveryFilterColourTypeAndChunkSplit) {
  const int kTypes[][2] = {{8, 0}, {8, 4}, {8, 2}, {8, 6}, {16, 0}, {16, 2}};  // the last: libpng's path
  unsigned seed = 1;
  for (const auto& type : kTypes) {
    for (const auto& size : {std::pair{1, 1}, std::pair{7, 5}, std::pair{33, 17}, std::pair{1, 9}, std::pair{64, 1}}) {
      for (int parts : {1, 3}) {
        HandMade h = random_image(size.first, size.second, type[0], type[1], seed++);
        h.idat_parts = parts;
        const Bytes bytes = encode(h);
        const std::string what = "depth " + std::to_string(type[0]) + " type " + std::to_string(type[1]) + " " +
                                 std::to_string(size.first) + "x" + std::to_string(size.second) + " in " +
                                 std::to_string(parts) + " IDATs";
        expect_same(decode_grey(bytes, "hand.png"), opencv_grey(bytes), what);
        const bool fast = s3d::io::detail::decode_png_grey_fast(bytes.data(), bytes.size()).bit_depth != 0;
        EXPECT_EQ(fast, !(type[0] == 16 && type[1] == 2)) << what;
      }
    }
  }
}

TEST(PngGrey, AncillaryChunksAndAPaletteHintAreIgnoredAsLibpngDoes) {
  HandMade h = random_image(9, 4, 8, 2, 7);
  h.before_idat = {{"gAMA", {0, 0, 0xb1, 0x8f}},
                   {"PLTE", {1, 2, 3, 4, 5, 6}},
                   {"tRNS", {0, 1, 0, 2, 0, 3}},
                   {"tEXt", {'a', 0, 'b'}}};
  const Bytes bytes = encode(h);
  expect_same(decode_grey(bytes, "hints.png"), opencv_grey(bytes), "RGB with gAMA, PLTE, tRNS, tEXt");
  EXPECT_EQ(s3d::io::detail::decode_png_grey_fast(bytes.data(), bytes.size()).bit_depth, 8);
}

TEST(PngGrey, WhatLibpngWouldJudgeOtherwiseIsLeftToIt) {
  // A zlib window below 32 KiB (libdeflate would read a distance beyond it that zlib refuses), a second
  // palette and an empty one in an RGB image (libpng refuses them): not on the fast path, and the result
  // (pixels or error) is libpng's.
  HandMade small = random_image(6, 3, 8, 2, 11);
  small.window_bits = 14;  // a 16 KiB window
  const Bytes bytes = encode(small);
  EXPECT_EQ(bytes[8 + 25 + 8] >> 4, 6);  // the zlib header's CINFO
  EXPECT_EQ(s3d::io::detail::decode_png_grey_fast(bytes.data(), bytes.size()).bit_depth, 0);
  expect_same(decode_grey(bytes, "window.png"), opencv_grey(bytes), "16 KiB window");
  for (const Bytes& palette : {Bytes{}, Bytes{1, 2, 3}}) {
    HandMade h = random_image(5, 4, 8, 2, 12);
    h.before_idat = {{"PLTE", {1, 2, 3}}, {"PLTE", palette}};
    if (palette.empty()) h.before_idat = {{"PLTE", {}}};
    const Bytes b = encode(h);
    EXPECT_EQ(s3d::io::detail::decode_png_grey_fast(b.data(), b.size()).bit_depth, 0) << palette.size();
  }
}

TEST(PngGrey, DamagedFilesFailAsThroughLibpng) {
  // Each is left to libpng, whose message the caller reports (one line naming the file).
  auto message = [](const Bytes& bytes) {
    try {
      decode_grey(bytes, "bad.png");
    } catch (const s3d::IoError& e) {
      return std::string(e.what());
    }
    return std::string("decoded");
  };
  HandMade crc = random_image(8, 6, 8, 2, 3);
  crc.bad_idat_crc = true;
  EXPECT_EQ(message(encode(crc)).rfind("bad.png: cannot decode image: ", 0), 0u) << message(encode(crc));

  HandMade filter = random_image(8, 6, 8, 0, 4);
  filter.bad_filter_row = 2;
  EXPECT_EQ(message(encode(filter)).rfind("bad.png: cannot decode image: ", 0), 0u) << message(encode(filter));

  Bytes truncated = encode(random_image(40, 30, 8, 6, 5));
  truncated.resize(truncated.size() - 40);  // inside the last IDAT
  EXPECT_EQ(message(truncated).rfind("bad.png: cannot decode image: ", 0), 0u) << message(truncated);

  HandMade grey_palette = random_image(5, 5, 8, 0, 6);  // a PLTE in a grey image: libpng refuses it
  grey_palette.before_idat = {{"PLTE", {1, 2, 3}}};
  const std::string palette = message(encode(grey_palette));
  EXPECT_TRUE(palette == "decoded" || palette.rfind("bad.png: ", 0) == 0) << palette;
  if (palette == "decoded")
    expect_same(decode_grey(encode(grey_palette), "p.png"), opencv_grey(encode(grey_palette)), "PLTE in grey");
}

TEST(PngGrey, SixteenBitWideningAndNarrowingKeepTheirMeaning) {
  HandMade h = random_image(11, 3, 16, 0, 9);
  const Bytes bytes = encode(h);
  GreyImage g = decode_grey(bytes, "d.png");
  ASSERT_EQ(g.bit_depth, 16);
  EXPECT_EQ(g.sixteen.at(0, 0), static_cast<std::uint16_t>(h.rows[0][0] << 8 | h.rows[0][1]));  // big endian
  int depth = 0;
  EXPECT_EQ(decode_grey16(bytes, "d.png", &depth).data, g.sixteen.data);
  EXPECT_EQ(depth, 16);
  const Bytes grey8 = encode(random_image(6, 2, 8, 0, 10));
  const ImageU16 wide = decode_grey16(grey8, "g.png", &depth);
  EXPECT_EQ(depth, 8);
  const GreyImage narrow = decode_grey(grey8, "g.png");
  for (std::size_t i = 0; i < wide.data.size(); ++i) EXPECT_EQ(wide.data[i], narrow.eight.data[i]);  // not x257
}
