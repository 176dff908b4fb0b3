// Hand-made files for what the real data lacks: big-endian PLY with every type and lists, type aliases,
// double positions, PCD COUNT > 1 and NaN, every .npy variant, the by-extension dispatcher.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cloud_test_util.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/index_list.hpp"
#include "s3d/io/point_cloud_io.hpp"

using namespace s3d;
using namespace s3d::io;
using s3d::test::CloudTempDir;
using s3d::test::expect_same_cloud;

namespace {

template <typename T>
void put(std::string* out, T v, bool big_endian) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if (big_endian) std::reverse(b, b + sizeof(T));
  out->append(reinterpret_cast<const char*>(b), sizeof(T));
}

// A binary_big_endian PLY with every scalar type (PLY 1.0 names), double positions, a vertex list and faces.
std::string big_endian_ply() {
  std::string s =
      "ply\nformat binary_big_endian 1.0\ncomment hand made\nobj_info made by a test\nelement vertex 2\n"
      "property double x\nproperty double y\nproperty double z\nproperty char a\nproperty uchar b\n"
      "property short c\nproperty ushort d\nproperty int e\nproperty uint f\nproperty float g\n"
      "property list uchar short idx\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";
  const double xyz[2][3] = {{1.5, -2.25, 1e-3}, {0.1, 1e10, -0.0}};
  for (int i = 0; i < 2; ++i) {
    for (double v : xyz[i]) put<double>(&s, v, true);
    put<std::int8_t>(&s, static_cast<std::int8_t>(-5 - i), true);
    put<std::uint8_t>(&s, static_cast<std::uint8_t>(250 + i), true);
    put<std::int16_t>(&s, static_cast<std::int16_t>(-30000 + i), true);
    put<std::uint16_t>(&s, static_cast<std::uint16_t>(60000 + i), true);
    put<std::int32_t>(&s, -2000000000 + i, true);
    put<std::uint32_t>(&s, 4000000000u + i, true);
    put<float>(&s, 0.1f * (i + 1), true);
    if (i == 0) {
      put<std::uint8_t>(&s, 3, true);
      for (std::int16_t v : {1, -2, 3}) put<std::int16_t>(&s, v, true);
    } else {
      put<std::uint8_t>(&s, 0, true);
    }
  }
  put<std::uint8_t>(&s, 3, true);
  for (std::int32_t v : {0, 1, 0}) put<std::int32_t>(&s, v, true);
  return s;
}

std::string npy_file(int major, const std::string& descr, bool fortran, const std::string& shape,
                     const std::string& data) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string s = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  if (major == 1)
    put<std::uint16_t>(&s, static_cast<std::uint16_t>(dict.size()), false);
  else
    put<std::uint32_t>(&s, static_cast<std::uint32_t>(dict.size()), false);
  return s + dict + data;
}

}  // namespace

TEST(PlyFormats, BigEndianEveryTypeListsAndFacesReadAndRoundTrip) {
  CloudTempDir dir;
  const PointCloud c = read_ply(dir.write("be.ply", big_endian_ply()));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.meta.encoding, "binary_big_endian");
  EXPECT_EQ(c.meta.comments, (std::vector<std::string>{"hand made"}));
  EXPECT_EQ(c.meta.obj_info, (std::vector<std::string>{"made by a test"}));
  EXPECT_EQ(c.meta.property_order, (std::vector<std::string>{"x", "y", "z", "a", "b", "c", "d", "e", "f", "g", "idx"}));
  EXPECT_EQ(c.xyz[0], 1.5f);
  EXPECT_EQ(c.xyz[2], static_cast<float>(1e-3));
  EXPECT_EQ(c.xyz[4], 1e10f);
  // double positions are also kept as they were
  ASSERT_NE(c.find("z"), nullptr);
  EXPECT_EQ(c.find("z")->type, ScalarType::kFloat64);
  EXPECT_EQ(c.find("z")->value(0), 1e-3);
  EXPECT_EQ(c.find("a")->value(1), -6.0);
  EXPECT_EQ(c.find("b")->value(1), 251.0);
  EXPECT_EQ(c.find("c")->value(0), -30000.0);
  EXPECT_EQ(c.find("d")->value(1), 60001.0);
  EXPECT_EQ(c.find("e")->value(0), -2000000000.0);
  EXPECT_EQ(c.find("f")->value(1), 4000000001.0);
  EXPECT_EQ(c.find("g")->value(1), static_cast<double>(0.2f));
  const AttributeColumn* idx = c.find("idx");
  ASSERT_TRUE(idx && idx->is_list);
  EXPECT_EQ(idx->type, ScalarType::kInt16);
  EXPECT_EQ(idx->offsets, (std::vector<std::uint64_t>{0, 3, 3}));
  EXPECT_EQ(idx->value(0, 1), -2.0);
  ASSERT_EQ(c.elements.size(), 1u);
  EXPECT_EQ(c.elements[0].properties[0].value(0, 1), 1.0);
  for (PlyFormat f : {PlyFormat::kAscii, PlyFormat::kBinaryLittleEndian, PlyFormat::kBinaryBigEndian}) {
    write_ply(dir.file("out.ply"), c, f);
    expect_same_cloud(c, read_ply(dir.file("out.ply")), true, "format " + std::to_string(int(f)));
  }
  // Written big endian, the file is the original one byte for byte.
  write_ply(dir.file("be2.ply"), c, PlyFormat::kBinaryBigEndian);
  const std::string original = big_endian_ply(), again = s3d::test::file_bytes(dir.file("be2.ply"));
  EXPECT_EQ(original, again);
}

// float x y z + uchar r g b records take a SIMD path on AVX2 machines: every count around its 16-record
// steps reads back what was written, the same as the baseline copy (S3D_CPU_ISA=baseline).
TEST(PlyFormats, XyzRgbRecordsReadTheSameOnEveryPath) {
  CloudTempDir dir;
  for (std::size_t n : {1u, 2u, 15u, 16u, 17u, 18u, 33u, 64u, 100u, 1001u}) {
    PointCloud c;
    c.resize(n);
    for (std::size_t i = 0; i < c.xyz.size(); ++i) c.xyz[i] = 0.5f * static_cast<float>(i) - 7.0f;
    for (const char* name : {"red", "green", "blue"}) {
      AttributeColumn& col = c.add_attribute(name, ScalarType::kUint8);
      for (std::size_t i = 0; i < n; ++i) col.bytes[i] = static_cast<std::uint8_t>(i * 7 + name[0]);
    }
    const std::string path = dir.file("rgb" + std::to_string(n) + ".ply");
    write_ply(path, c, PlyFormat::kBinaryLittleEndian);
    const PointCloud fast = read_ply(path);
    expect_same_cloud(c, fast, false, "n = " + std::to_string(n));
    ::setenv("S3D_CPU_ISA", "baseline", 1);
    const PointCloud baseline = read_ply(path);
    ::unsetenv("S3D_CPU_ISA");
    expect_same_cloud(fast, baseline, true, "baseline, n = " + std::to_string(n));
  }
}

// One cloud read into again and again (its storage lent to the next file) equals a fresh read every time:
// across encodings, double and float positions, lists, more and fewer points; a failed read leaves it empty.
TEST(PlyFormats, ReadingIntoAReusedCloudEqualsAFreshRead) {
  CloudTempDir dir;
  const std::string be = dir.write("be.ply", big_endian_ply());
  PointCloud small = read_ply(be);
  write_ply(dir.file("le.ply"), small, PlyFormat::kBinaryLittleEndian);
  write_ply(dir.file("a.ply"), small, PlyFormat::kAscii);
  PointCloud rgb;
  rgb.resize(5);
  for (std::size_t i = 0; i < rgb.xyz.size(); ++i) rgb.xyz[i] = 0.25f * static_cast<float>(i);
  AttributeColumn& red = rgb.add_attribute("red", ScalarType::kUint8);
  for (std::size_t i = 0; i < rgb.size(); ++i) red.bytes[i] = static_cast<std::uint8_t>(10 * i + 1);
  rgb.add_attribute("alpha", ScalarType::kUint16).set_value(4, 0, 999);
  write_ply(dir.file("rgb.ply"), rgb, PlyFormat::kBinaryLittleEndian);
  rgb.resize(3);
  write_ply(dir.file("rgb3.ply"), rgb, PlyFormat::kBinaryLittleEndian);
  write_ply(dir.file("empty.ply"), PointCloud{}, PlyFormat::kBinaryLittleEndian);
  PointCloud reused;
  for (const char* name : {"rgb.ply", "rgb3.ply", "rgb.ply", "be.ply", "rgb.ply", "le.ply", "a.ply", "empty.ply",
                           "rgb3.ply", "rgb3.ply"}) {
    read_point_cloud(dir.file(name), &reused);
    expect_same_cloud(read_ply(dir.file(name)), reused, true, name);
    EXPECT_EQ(reused.meta.source, dir.file(name));
  }
  EXPECT_THROW(read_point_cloud(dir.write("bad.ply",
                                          "ply\nformat binary_little_endian 1.0\nelement vertex 9\n"
                                          "property float x\nproperty float y\nproperty float z\n"
                                          "end_header\n"),
                                &reused),
               IoError);
  EXPECT_TRUE(reused.empty() && reused.attributes.empty() && reused.meta.source.empty());
}

TEST(PlyFormats, MovedPositionsReplaceTheOriginalDoubleColumns) {
  CloudTempDir dir;
  PointCloud c = read_ply(dir.write("be.ply", big_endian_ply()));
  c.xyz[0] = 7.0f;  // x of point 0 no longer matches the double column
  write_ply(dir.file("moved.ply"), c, PlyFormat::kBinaryLittleEndian);
  const PointCloud back = read_ply(dir.file("moved.ply"));
  EXPECT_EQ(back.xyz[0], 7.0f);
  EXPECT_EQ(back.find("x"), nullptr);  // written from the positions, as float32
  ASSERT_NE(back.find("y"), nullptr);  // y and z still match their doubles: kept
  EXPECT_EQ(back.find("y")->value(1), 1e10);
}

TEST(PlyFormats, AsciiWithSizedTypeNamesAndAnElementBeforeTheVertices) {
  CloudTempDir dir;
  const std::string text =
      "ply\r\nformat ascii 1.0\r\nelement edge 1\r\nproperty int32 v1\r\nproperty int32 v2\r\n"
      "element vertex 2\r\nproperty float32 x\r\nproperty float32 y\r\nproperty float64 z\r\nproperty int8 a\r\n"
      "property uint8 b\r\nproperty int16 c\r\nproperty uint16 d\r\nproperty uint32 f\r\nend_header\r\n"
      "0 1\r\n"
      "1 2 3.25 -128 255 -32768 65535 4294967295\r\n"
      "-1e-3 +2 nan 127 0 32767 0 0\r\n";
  const PointCloud c = read_ply(dir.write("a.ply", text));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.meta.points_element_index, 1u);
  EXPECT_EQ(c.find("a")->value(0), -128.0);
  EXPECT_EQ(c.find("f")->value(0), 4294967295.0);
  EXPECT_EQ(c.xyz[3], -1e-3f);
  EXPECT_TRUE(std::isnan(c.xyz[5]));
  EXPECT_EQ(c.elements[0].name, "edge");
  EXPECT_EQ(c.elements[0].properties[1].value(0), 1.0);
  write_ply(dir.file("b.ply"), c, PlyFormat::kBinaryLittleEndian);
  const PointCloud back = read_ply(dir.file("b.ply"));
  expect_same_cloud(c, back, true, "ascii -> binary");
  // The edge element stays before the vertices.
  const std::string header = s3d::test::file_bytes(dir.file("b.ply"));
  EXPECT_LT(header.find("element edge 1"), header.find("element vertex 2"));
  // A list longer than its declared length type is an error (it could not be written back).
  EXPECT_THROW(read_ply(dir.write("l.ply",
                                  "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"
                                  "property float y\nproperty float z\nproperty list uchar int n\n"
                                  "end_header\n0 0 0 256 1 2\n")),
               s3d::IoError);
  // Out-of-range values are errors, not wrapped.
  EXPECT_THROW(read_ply(dir.write("r.ply",
                                  "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"
                                  "property float y\nproperty float z\nproperty uchar b\nend_header\n"
                                  "0 0 0 256\n")),
               s3d::IoError);
}

TEST(PlyFormats, MultiComponentAttributesAreWrittenAsNumberedProperties) {
  CloudTempDir dir;
  PointCloud c;
  c.resize(2);
  AttributeColumn& n = c.add_attribute("normal", ScalarType::kFloat32, 3);
  n.set_value(1, 2, 0.5);
  write_ply(dir.file("n.ply"), c, PlyFormat::kAscii);
  const std::string text = s3d::test::file_bytes(dir.file("n.ply"));
  EXPECT_NE(text.find("property float normal_0\nproperty float normal_1\nproperty float normal_2\n"),
            std::string::npos);
  EXPECT_EQ(read_ply(dir.file("n.ply")).find("normal_2")->value(1), 0.5);
}

TEST(PcdFormats, CountTypesNanAndViewpointRoundTripInEveryKind) {
  CloudTempDir dir;
  const std::string text =
      "# .PCD v0.7 - Point Cloud Data file format\n# a comment\nVERSION 0.7\nFIELDS x y z label hist\n"
      "SIZE 4 4 4 1 2\nTYPE F F F I U\nCOUNT 1 1 1 1 2\nWIDTH 2\nHEIGHT 1\nVIEWPOINT 1 2 3 1 0 0 0\nPOINTS 2\n"
      "DATA ascii\n1 2 3 -4 5 6\nnan nan nan 7 65535 0\n";
  const PointCloud c = read_pcd(dir.write("a.pcd", text));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.meta.comments, (std::vector<std::string>{"a comment"}));
  EXPECT_EQ(c.meta.viewpoint, (std::array<double, 7>{1, 2, 3, 1, 0, 0, 0}));
  EXPECT_EQ(c.find("label")->type, ScalarType::kInt8);
  EXPECT_EQ(c.find("label")->value(0), -4.0);
  EXPECT_EQ(c.find("hist")->components, 2);
  EXPECT_EQ(c.find("hist")->value(1, 0), 65535.0);
  EXPECT_TRUE(std::isnan(c.xyz[3]));
  for (PcdData d : {PcdData::kAscii, PcdData::kBinary, PcdData::kBinaryCompressed}) {
    write_pcd(dir.file("o.pcd"), c, d);
    expect_same_cloud(c, read_pcd(dir.file("o.pcd")), true, to_string(d));
  }
  // v0.6-style header (no VIEWPOINT, no COUNT), binary little endian.
  std::string v6 = "VERSION .6\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA binary\n";
  for (float v : {1.0f, 2.0f, 3.0f}) put<float>(&v6, v, false);
  const PointCloud old = read_pcd(dir.write("v6.pcd", v6));
  EXPECT_EQ(old.xyz, (std::vector<float>{1, 2, 3}));
  EXPECT_FALSE(old.meta.has_viewpoint);
}

TEST(PcdFormats, CompressionShrinksRepetitiveDataAndRoundTripsRandomData) {
  CloudTempDir dir;
  PointCloud flat;
  flat.resize(10000);  // all zeros: LZF must compress it hard
  write_pcd(dir.file("flat.pcd"), flat, PcdData::kBinaryCompressed);
  EXPECT_LT(s3d::test::file_bytes(dir.file("flat.pcd")).size(), 2000u);
  EXPECT_EQ(read_pcd(dir.file("flat.pcd")).xyz, flat.xyz);
  PointCloud noisy;
  noisy.resize(5000);
  std::uint32_t state = 12345;
  for (float& v : noisy.xyz) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / 65536.0f;
    if (state % 7 == 0) v = 1.0f;  // some repeats
  }
  write_pcd(dir.file("noisy.pcd"), noisy, PcdData::kBinaryCompressed);
  EXPECT_EQ(read_pcd(dir.file("noisy.pcd")).xyz, noisy.xyz);
}

TEST(NpyFormats, VersionsByteOrdersLayoutsAndTypes) {
  CloudTempDir dir;
  {  // v1, little-endian float32, C order, (2, 4): x y z col3
    std::string data;
    for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f}) put<float>(&data, v, false);
    const PointCloud c = read_npy(dir.write("a.npy", npy_file(1, "<f4", false, "(2, 4)", data)));
    EXPECT_EQ(c.xyz, (std::vector<float>{1, 2, 3, 5, 6, 7}));
    ASSERT_NE(c.find("col3"), nullptr);
    EXPECT_EQ(c.find("col3")->value(1), 8.0);
  }
  {  // v2, big-endian float64, Fortran order, (2, 3): columns stored one after the other
    std::string data;
    for (double v : {1.0, 4.0, 2.0, 5.0, 3.0, 6.0}) put<double>(&data, v, true);
    const PointCloud c = read_npy(dir.write("b.npy", npy_file(2, ">f8", true, "(2, 3)", data)));
    EXPECT_EQ(c.xyz, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(c.find("x")->type, ScalarType::kFloat64);
  }
  {  // v3, int16
    std::string data;
    for (std::int16_t v : {-1, 2, -3}) put<std::int16_t>(&data, v, false);
    const PointCloud c = read_npy(dir.write("c.npy", npy_file(3, "<i2", false, "(1, 3)", data)));
    EXPECT_EQ(c.xyz, (std::vector<float>{-1, 2, -3}));
    EXPECT_EQ(c.find("z")->type, ScalarType::kInt16);
  }
  {  // uint8 and int64 (converted to float64)
    const PointCloud u =
        read_npy(dir.write("d.npy", npy_file(1, "|u1", false, "(1, 3)", std::string("\x01\x02\xff", 3))));
    EXPECT_EQ(u.xyz, (std::vector<float>{1, 2, 255}));
    std::string data;
    for (std::int64_t v : {std::int64_t{-5}, std::int64_t{1} << 40, std::int64_t{7}})
      put<std::int64_t>(&data, v, false);
    const PointCloud l = read_npy(dir.write("e.npy", npy_file(1, "<i8", false, "(1, 3)", data)));
    EXPECT_EQ(l.find("y")->type, ScalarType::kFloat64);
    EXPECT_EQ(l.find("y")->value(0), 1099511627776.0);
  }
  EXPECT_THROW(read_npy(dir.write("f.npy", npy_file(1, "<f4", false, "(3,)", std::string(12, '\0')))), s3d::DataError);
  EXPECT_THROW(read_npy(dir.write("g.npy", npy_file(1, "<f4", false, "(2, 2)", std::string(16, '\0')))),
               s3d::DataError);
  EXPECT_THROW(read_npy(dir.write("h.npy", npy_file(1, "<c8", false, "(1, 3)", std::string(24, '\0')))),
               s3d::DataError);
}

TEST(NpyFormats, WritesFloat32WithEveryAttributeComponent) {
  CloudTempDir dir;
  PointCloud c;
  c.xyz = {1, 2, 3, 4, 5, 6};
  c.add_attribute("intensity", ScalarType::kUint8).set_value(1, 0, 200);
  c.add_attribute("normal", ScalarType::kFloat32, 3).set_value(0, 2, -0.5);
  write_npy(dir.file("w.npy"), c);
  const std::string bytes = s3d::test::file_bytes(dir.file("w.npy"));
  const std::size_t header = 10 + (static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ(header % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (2, 7)"), std::string::npos);
  EXPECT_EQ(bytes.size(), header + 2 * 7 * 4);
  const PointCloud back = read_npy(dir.file("w.npy"));
  EXPECT_EQ(back.xyz, c.xyz);
  EXPECT_EQ(back.find("col3")->value(1), 200.0);
  EXPECT_EQ(back.find("col6")->value(0), -0.5);
  // Lists have no place in a matrix.
  PointCloud listed = read_ply(dir.write("be.ply", big_endian_ply()));
  EXPECT_THROW(write_npy(dir.file("l.npy"), listed), s3d::InvalidArgument);
  EXPECT_THROW(write_pcd(dir.file("l.pcd"), listed), s3d::InvalidArgument);
}

TEST(NpyFormats, DoublesAndWideIntegersAreWrittenAsFloat64) {
  // Georeferenced coordinates read as float64 stay float64 (float32 would keep ~0.03 m at 5.4e6 m).
  CloudTempDir dir;
  std::string data;
  for (double v : {450000.123456789, 5400000.987654321, 300.5, 450001.25, 5400001.5, 301.0})
    put<double>(&data, v, false);
  const PointCloud geo = read_npy(dir.write("geo.npy", npy_file(1, "<f8", false, "(2, 3)", data)));
  write_npy(dir.file("geo_out.npy"), geo);
  const std::string bytes = s3d::test::file_bytes(dir.file("geo_out.npy"));
  EXPECT_NE(bytes.find("'descr': '<f8'"), std::string::npos);
  const PointCloud back = read_npy(dir.file("geo_out.npy"));
  EXPECT_EQ(back.find("x")->value(0), 450000.123456789);
  EXPECT_EQ(back.find("y")->value(1), 5400001.5);
  EXPECT_EQ(back.xyz, geo.xyz);
  // A uint32 attribute beyond 2^24 would lose its low bits in float32.
  PointCloud c;
  c.xyz = {1, 2, 3};
  c.add_attribute("id", ScalarType::kUint32).set_value(0, 0, 16777217.0);
  write_npy(dir.file("id.npy"), c);
  EXPECT_EQ(read_npy(dir.file("id.npy")).find("col3")->value(0), 16777217.0);
}

TEST(IndexListText, OneDecimalIndexPerLineEachEndedByANewline) {
  EXPECT_EQ(io::index_list_text({0, 17, -1, 2147483647}), "0\n17\n-1\n2147483647\n");
  EXPECT_EQ(io::index_list_text({}), "");
}

TEST(CloudDispatch, ChoosesByExtensionOrByTheGivenFormat) {
  EXPECT_EQ(cloud_format_of("a/b.PLY"), CloudFormat::kPly);
  EXPECT_EQ(cloud_format_of("scan.pcd"), CloudFormat::kPcd);
  EXPECT_EQ(cloud_format_of("000000.bin"), CloudFormat::kKittiBin);
  EXPECT_EQ(cloud_format_of("x.npy"), CloudFormat::kNpy);
  EXPECT_THROW(cloud_format_of("x.txt"), s3d::InvalidArgument);
  EXPECT_EQ(parse_cloud_format("kitti"), CloudFormat::kKittiBin);
  EXPECT_THROW(parse_cloud_format("las"), s3d::InvalidArgument);
  CloudTempDir dir;
  PointCloud c;
  c.xyz = {1, 2, 3};
  c.add_attribute("intensity", ScalarType::kFloat32).set_value(0, 0, 0.25);
  for (CloudFormat f : {CloudFormat::kPly, CloudFormat::kPcd, CloudFormat::kKittiBin, CloudFormat::kNpy}) {
    CloudWriteOptions o;
    o.format = f;
    o.ply = PlyFormat::kAscii;
    o.pcd = PcdData::kBinaryCompressed;
    const std::string path = dir.file(std::string("cloud_without_extension_") + to_string(f));
    write_point_cloud(path, c, o);
    const PointCloud back = read_point_cloud(path, f);
    EXPECT_EQ(back.xyz, c.xyz) << to_string(f);
    const AttributeColumn* i = back.find(f == CloudFormat::kNpy ? "col3" : "intensity");
    ASSERT_NE(i, nullptr) << to_string(f);
    EXPECT_EQ(i->value(0), 0.25) << to_string(f);
  }
  EXPECT_THROW(read_point_cloud(dir.file("cloud_without_extension_ply")), s3d::InvalidArgument);
}
