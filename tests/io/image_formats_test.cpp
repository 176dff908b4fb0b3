// Raster formats of s3d::io: PFM, the 16-bit disparity/depth PNG encodings, grey conversion, colour maps.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/io/colormap.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/pfm.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace s3d::io;

namespace {

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("s3d_io_test_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ImageF random_disparity(int w, int h, unsigned seed, float max_d) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, max_d);
  ImageF img(w, h);
  for (float& v : img.data) v = u(rng);
  img.at(0, 0) = kInvalid;
  img.at(w - 1, h - 1) = kInvalid;
  return img;
}

}  // namespace

TEST(Pfm, RoundTripBothByteOrdersKeepsInfinityAndRowOrder) {
  TempDir dir;
  ImageF img = random_disparity(7, 5, 1, 300.0f);
  img.at(3, 0) = -2.5f;
  for (bool le : {true, false}) {
    const std::string p = dir.file(le ? "le.pfm" : "be.pfm");
    write_pfm(p, img, le);
    const ImageF back = read_pfm(p);
    ASSERT_EQ(back.width, 7);
    ASSERT_EQ(back.height, 5);
    ASSERT_EQ(back.channels, 1);
    for (std::size_t i = 0; i < img.data.size(); ++i) {
      if (std::isinf(img.data[i]))
        EXPECT_TRUE(std::isinf(back.data[i]) && back.data[i] > 0);
      else
        EXPECT_EQ(back.data[i], img.data[i]) << i;
    }
    // Header and bottom-to-top storage: the first stored float is the bottom-left pixel.
    const std::string bytes = read_bytes(p);
    const std::string header = std::string("Pf\n7 5\n") + (le ? "-1.0\n" : "1.0\n");
    ASSERT_EQ(bytes.substr(0, header.size()), header);
    ASSERT_EQ(bytes.size(), header.size() + 7 * 5 * 4);
    unsigned char b[4];
    std::memcpy(b, bytes.data() + header.size(), 4);
    if (!le) std::swap(b[0], b[3]), std::swap(b[1], b[2]);
    float first = 0;
    std::memcpy(&first, b, 4);
    EXPECT_EQ(first, img.at(0, 4));
  }
}

TEST(Pfm, ThreeChannelsRoundTrip) {
  TempDir dir;
  ImageF img(3, 2, 3);
  for (std::size_t i = 0; i < img.data.size(); ++i) img.data[i] = static_cast<float>(i) * 0.5f;
  write_pfm(dir.file("c.pfm"), img);
  const ImageF back = read_pfm(dir.file("c.pfm"));
  EXPECT_EQ(back.channels, 3);
  EXPECT_EQ(back.data, img.data);
}

TEST(Pfm, BadFilesThrowIoErrorNamingTheFile) {
  TempDir dir;
  const std::string missing = dir.file("missing.pfm");
  try {
    read_pfm(missing);
    FAIL();
  } catch (const s3d::IoError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
  }
  {
    std::ofstream(dir.file("text.pfm")) << "hello world\n";
    EXPECT_THROW(read_pfm(dir.file("text.pfm")), s3d::IoError);
  }
  {
    std::ofstream(dir.file("short.pfm"), std::ios::binary) << "Pf\n4 4\n-1.0\n0123";
    try {
      read_pfm(dir.file("short.pfm"));
      FAIL();
    } catch (const s3d::IoError& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

// std::filesystem::exists throws for a name the OS refuses (found by fuzzing the calibration reader).
TEST(ImageRead, PathLongerThanNameMaxIsNoSuchFile) {
  const std::string long_name = std::string(300, 'a') + ".png";
  EXPECT_THROW(read_grey8(long_name), s3d::IoError);
  EXPECT_THROW(read_file_bytes(long_name), s3d::IoError);
  EXPECT_THROW(read_disparity(long_name), s3d::IoError);
}

// A 33-byte PNG whose IHDR says 30000x30000 RGBA16 (valid CRC): OpenCV could allocate 7.2 GB before finding
// the data missing (found by fuzzing); refused from the header, naming the size.
TEST(ImageRead, PngHeaderPromisingMorePixelsThanItsBytesCanHold) {
  const std::vector<std::uint8_t> png = {0x89, 'P',  'N',  'G',  '\r', '\n', 0x1a, '\n', 0x00, 0x00,
                                         0x00, 0x0d, 'I',  'H',  'D',  'R',  0x00, 0x00, 0x75, 0x30,
                                         0x00, 0x00, 0x75, 0x30, 0x10, 0x06, 0x00, 0x00, 0x00};
  std::vector<std::uint8_t> bytes = png;
  const std::uint32_t crc = 0x36b724f9;  // zlib.crc32(b"IHDR" + the 13 header bytes)
  for (int k = 3; k >= 0; --k) bytes.push_back(static_cast<std::uint8_t>(crc >> (8 * k)));
  try {
    decode_grey16(bytes, "huge.png");
    FAIL();
  } catch (const s3d::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("30000x30000"), std::string::npos) << e.what();
  }
}

// A broken PNG signature with "DICM" at byte 128: OpenCV passed it to GDCM, which aborted the process (found by
// fuzzing); refused before any decoder sees it.
TEST(ImageRead, DicomSignatureIsRefusedNotDecoded) {
  std::vector<std::uint8_t> bytes(200, 0);
  const char head[] = "\x89PNG\r\n\x1a";  // the eighth signature byte is wrong: not a PNG
  std::copy(head, head + 7, bytes.begin());
  std::copy_n("DICM", 4, bytes.begin() + 128);
  try {
    decode_grey16(bytes, "scan.png");
    FAIL();
  } catch (const s3d::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("scan.png: DICOM"), std::string::npos) << e.what();
  }
}

TEST(DisparityPng, KittiRoundTripQuantisesToOne256th) {
  TempDir dir;
  ImageF d = random_disparity(31, 17, 2, 250.0f);
  d.at(5, 5) = 0.0f;    // cannot be stored: becomes invalid
  d.at(6, 5) = 300.0f;  // beyond 65535/256: invalid
  d.at(7, 5) = 1.0f / 256.0f;
  const ImageU16 enc = encode_png16(d, PngEncoding::kKitti);
  EXPECT_EQ(enc.at(0, 0), 0);
  EXPECT_EQ(enc.at(5, 5), 0);
  EXPECT_EQ(enc.at(6, 5), 0);
  EXPECT_EQ(enc.at(7, 5), 1);
  write_image(dir.file("k.png"), enc);
  const ImageF back = read_disparity(dir.file("k.png"));  // 16-bit PNG -> KITTI by default
  for (int y = 0; y < d.height; ++y)
    for (int x = 0; x < d.width; ++x) {
      const float v = d.at(x, y);
      if (!std::isfinite(v) || v <= 0.0f || v > 255.99f) {
        EXPECT_TRUE(std::isinf(back.at(x, y))) << x << "," << y;
      } else {
        EXPECT_NEAR(back.at(x, y), v, 0.5f / 256.0f + 1e-5f);
        EXPECT_EQ(back.at(x, y), std::round(v * 256.0f) / 256.0f);
      }
    }
}

TEST(UnitPng8, ClampedScaledBy255AndRoundedToTheNearest) {
  ImageF c(7, 1);
  c.data = {0.0f, 1.0f, 0.5f, -0.2f, 3.0f, 0.1f, 0.998f};
  const ImageU8 enc = encode_unit_png8(c);
  EXPECT_EQ(enc.width, 7);
  EXPECT_EQ(enc.height, 1);
  // 0.5 * 255 = 127.5 rounds away from zero; 0.1 * 255 = 25.5 (25.500000372529 in float) to 26; 0.998 -> 254.49.
  EXPECT_EQ(enc.data, (std::vector<std::uint8_t>{0, 255, 128, 0, 255, 26, 254}));
}

TEST(DisparityPng, X16Encoding) {
  ImageF d(4, 1);
  d.data = {1.0f, 12.3125f, kInvalid, 4095.0f};
  const ImageU16 x16 = encode_png16(d, PngEncoding::kX16);
  EXPECT_EQ(x16.data, (std::vector<std::uint16_t>{16, 197, 0, 65520}));
  const ImageF back = decode_png16(x16, PngEncoding::kX16);
  EXPECT_EQ(back.data[1], 12.3125f);
  EXPECT_TRUE(std::isinf(back.data[2]));
  EXPECT_EQ(parse_png_encoding("x16"), PngEncoding::kX16);
  EXPECT_THROW(parse_png_encoding("kitty"), s3d::InvalidArgument);
  EXPECT_THROW(parse_png_encoding("mm"), s3d::InvalidArgument);  // depth takes a scale, not an encoding
}

TEST(DepthPng, AnyPositiveScale) {
  ImageF z(4, 1);
  z.data = {38.4383f, 70.0f, 0.0004f, kInvalid};  // metres; 70 m does not fit 16-bit mm, 0.4 mm rounds to 0
  EXPECT_EQ(encode_depth_png16(z, kDepthScaleMm).data, (std::vector<std::uint16_t>{38438, 0, 0, 0}));
  // TUM RGB-D: 5000 per metre, so 13.107 m is the farthest depth.
  ImageF t(3, 1);
  t.data = {1.0f, 13.107f, 13.2f};
  const ImageU16 tum = encode_depth_png16(t, kDepthScaleTum);
  EXPECT_EQ(tum.data, (std::vector<std::uint16_t>{5000, 65535, 0}));
  const ImageF back = decode_depth_png16(tum, kDepthScaleTum);
  EXPECT_EQ(back.data[0], 1.0f);
  EXPECT_TRUE(std::isinf(back.data[2]));
  EXPECT_EQ(encode_depth_png16(t, 256.5).data[0], 257);  // round(256.5)
  EXPECT_EQ(parse_depth_scale("tum"), 5000.0);
  EXPECT_EQ(parse_depth_scale("mm"), 1000.0);
  EXPECT_EQ(parse_depth_scale("4000"), 4000.0);
  for (const char* bad : {"0", "-5", "abc", "5000x", "nan", ""})
    EXPECT_THROW(parse_depth_scale(bad), s3d::InvalidArgument) << bad;
  EXPECT_THROW(encode_depth_png16(t, 0.0), s3d::InvalidArgument);
  EXPECT_THROW(decode_depth_png16(tum, -1.0), s3d::InvalidArgument);
}

TEST(Grey, ColourUsesBt601AndSixteenBitKeepsHighByte) {
  TempDir dir;
  ImageU8 rgb(3, 1, 3);
  rgb.data = {255, 0, 0, 0, 255, 0, 0, 0, 255};
  write_image(dir.file("rgb.png"), rgb);
  const ImageU8 g = read_grey8(dir.file("rgb.png"));
  ASSERT_EQ(g.channels, 1);
  EXPECT_EQ(g.data, (std::vector<std::uint8_t>{76, 150, 29}));  // round(255 * {.299, .587, .114})
  const ImageU8 back = read_rgb8(dir.file("rgb.png"));
  EXPECT_EQ(back.data, rgb.data);  // RGB order, not BGR
  ImageU16 w(2, 1);
  w.data = {0x1234, 0xff01};
  write_image(dir.file("w.png"), w);
  EXPECT_EQ(read_grey8(dir.file("w.png")).data, (std::vector<std::uint8_t>{0x12, 0xff}));
  EXPECT_EQ(read_grey16(dir.file("w.png")).data, w.data);
  const ImageInfo info = probe_image(dir.file("w.png"));
  EXPECT_EQ(info.bit_depth, 16);
  EXPECT_EQ(info.channels, 1);
}

TEST(Grey, UnreadableFilesThrowOneLineNamingTheFile) {
  TempDir dir;
  std::ofstream(dir.file("junk.png")) << "not a png";
  for (const std::string p : {dir.file("junk.png"), dir.file("absent.png")}) {
    try {
      read_grey8(p);
      FAIL() << p;
    } catch (const s3d::IoError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(p, 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos);
    }
  }
}

TEST(Colormap, InvalidIsBlackAndEndsDiffer) {
  ImageF d(3, 1);
  d.data = {0.0f, kInvalid, 10.0f};
  const ImageU8 c = colorize(d, 0.0f, 10.0f);
  ASSERT_EQ(c.channels, 3);
  EXPECT_EQ(c.at(1, 0, 0) + c.at(1, 0, 1) + c.at(1, 0, 2), 0);
  // Turbo: low end dark blue/purple, high end dark red.
  EXPECT_GT(c.at(0, 0, 2), c.at(0, 0, 0));
  EXPECT_GT(c.at(2, 0, 0), c.at(2, 0, 2));
  EXPECT_THROW(parse_colormap("viridis"), s3d::InvalidArgument);
}

TEST(RealData, ReadsMiddleburyEightBitGroundTruthWithInfoTxtScale) {
  S3D_REQUIRE_DATA(gt, "stereo/middlebury2001/tsukuba/groundtruth.png");
  const ImageF d = read_disparity(gt.string());
  EXPECT_EQ(d.width, 384);
  EXPECT_EQ(d.height, 288);
  float lo = 1e9f, hi = 0.0f;
  std::size_t invalid = 0;
  for (float v : d.data) {
    if (!std::isfinite(v)) {
      ++invalid;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 5.0f);     // 80 / 16
  EXPECT_EQ(hi, 14.0f);    // 224 / 16
  EXPECT_GT(invalid, 0u);  // the unknown border
}

TEST(RealData, ReadsFlyingThingsPfmAndKittiPng) {
  S3D_REQUIRE_DATA(pfm, "stereo/synthetic_flyingthings3d/0006/Disparity/0006.pfm");
  const ImageF d = read_disparity(pfm.string());
  EXPECT_EQ(d.width, 960);
  EXPECT_EQ(d.height, 540);
  float lo = 1e9f, hi = 0.0f;
  for (float v : d.data) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GT(lo, 1.0f);
  EXPECT_LT(hi, 100.0f);
  S3D_REQUIRE_DATA(kitti, "stereo/kitti2015/000005_10/gt_disparity.png");
  const ImageF k = read_disparity(kitti.string());
  std::size_t valid = 0;
  float khi = 0.0f;
  for (float v : k.data)
    if (std::isfinite(v)) ++valid, khi = std::max(khi, v);
  EXPECT_GT(valid, k.pixels() / 10);
  EXPECT_LT(valid, k.pixels() / 2);
  EXPECT_GT(khi, 50.0f);
  EXPECT_LT(khi, 103.0f);
}
