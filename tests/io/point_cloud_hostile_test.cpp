// Hostile input: truncated, corrupted and lying files fail with one line naming the file (IoError or
// DataError), and header counts are never trusted for allocation.
#include <gtest/gtest.h>

#include <cstring>

#include "cloud_test_util.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/point_cloud_io.hpp"

using namespace s3d;
using namespace s3d::io;
using s3d::test::CloudTempDir;

namespace {

// Reads `path` as `format`; a failure must be IoError or DataError, one line, starting with the path.
// Returns true when it failed.
bool fails_cleanly(const std::string& path, CloudFormat format) {
  try {
    read_point_cloud(path, format);
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return true;
  } catch (const DataError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return true;
  }
  return false;
}

// A file that must be refused: its name, bytes, format and a part of the message.
struct RefusedCase {
  const char* name;
  std::string bytes;
  CloudFormat format;
  const char* needle;
};

// Writes the case's file and reads it: the refusal's message (IoError or DataError, starting with the
// path), or "" after a failure when it was accepted.
std::string refusal_of(const CloudTempDir& dir, const RefusedCase& c) {
  const std::string path = dir.write(c.name, c.bytes);
  try {
    read_point_cloud(path, c.format);
  } catch (const s3d::Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(dynamic_cast<const IoError*>(&e) || dynamic_cast<const DataError*>(&e)) << c.name << ": " << m;
    EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
    return m;
  }
  ADD_FAILURE() << c.name << " was accepted";
  return "";
}

// Small valid files of every format (written by our writers from one cloud with lists and faces).
std::vector<std::pair<std::string, CloudFormat>> valid_files(const CloudTempDir& dir) {
  PointCloud c;
  c.resize(5);
  for (std::size_t i = 0; i < c.xyz.size(); ++i) c.xyz[i] = 0.5f * static_cast<float>(i) - 1.0f;
  c.add_attribute("intensity", ScalarType::kFloat32).set_value(3, 0, 0.75);
  c.add_attribute("label", ScalarType::kUint16).set_value(4, 0, 9);
  PointCloud meshed = c;
  AttributeColumn faces;
  faces.name = "vertex_indices";
  faces.is_list = true;
  faces.type = ScalarType::kInt32;
  faces.offsets = {0, 3, 6};
  faces.bytes.resize(6 * 4);
  meshed.elements.push_back(CloudElement{"face", 2, {faces}});
  std::vector<std::pair<std::string, CloudFormat>> files;
  write_ply(dir.file("a.ply"), meshed, PlyFormat::kAscii);
  write_ply(dir.file("le.ply"), meshed, PlyFormat::kBinaryLittleEndian);
  write_ply(dir.file("be.ply"), meshed, PlyFormat::kBinaryBigEndian);
  write_pcd(dir.file("a.pcd"), c, PcdData::kAscii);
  write_pcd(dir.file("b.pcd"), c, PcdData::kBinary);
  write_pcd(dir.file("c.pcd"), c, PcdData::kBinaryCompressed);
  write_kitti_bin(dir.file("k.bin"), c);
  write_npy(dir.file("n.npy"), c);
  for (const char* n : {"a.ply", "le.ply", "be.ply"}) files.emplace_back(dir.file(n), CloudFormat::kPly);
  for (const char* n : {"a.pcd", "b.pcd", "c.pcd"}) files.emplace_back(dir.file(n), CloudFormat::kPcd);
  files.emplace_back(dir.file("k.bin"), CloudFormat::kKittiBin);
  files.emplace_back(dir.file("n.npy"), CloudFormat::kNpy);
  return files;
}

}  // namespace

TEST(HostileClouds, EveryTruncationFailsCleanly) {
  CloudTempDir dir;
  for (const auto& [path, format] : valid_files(dir)) {
    const std::string bytes = s3d::test::file_bytes(path);
    ASSERT_NO_THROW(read_point_cloud(path, format)) << path;
    const std::string cut = dir.file("cut");
    std::size_t failures = 0;
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      dir.write("cut", bytes.substr(0, n));
      // An ascii file cut inside its last number may still parse (as a shorter number): not an error.
      failures += fails_cleanly(cut, format);
    }
    const bool ascii = path.find("/a.") != std::string::npos;
    if (format == CloudFormat::kKittiBin)
      EXPECT_EQ(failures, bytes.size() - bytes.size() / 16)
          << path;  // no header: whole points are a valid shorter scan
    else if (!ascii)
      EXPECT_EQ(failures, bytes.size()) << path;
    else
      EXPECT_GE(failures, bytes.size() - 3) << path;
  }
}

TEST(HostileClouds, FlippedBytesNeverCrash) {
  CloudTempDir dir;
  std::uint32_t state = 99;
  for (const auto& [path, format] : valid_files(dir)) {
    const std::string bytes = s3d::test::file_bytes(path);
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = bytes;
      for (int k = 0; k < 3; ++k) {
        state = state * 1664525u + 1013904223u;
        bad[(state >> 8) % bad.size()] = static_cast<char>(state >> 24);
      }
      dir.write("flip", bad);
      fails_cleanly(dir.file("flip"), format);  // parses or fails cleanly; must not crash or throw otherwise
    }
  }
}

TEST(HostileClouds, HeaderCountsAreCheckedAgainstTheFileSize) {
  CloudTempDir dir;
  const std::string xyz = "property float x\nproperty float y\nproperty float z\n";
  std::string lzf_bomb =
      "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1000000\nHEIGHT 1000\nPOINTS 1000000000\n"
      "DATA binary_compressed\n";
  const std::uint32_t sizes[2] = {4, 3000000000u};
  lzf_bomb.append(reinterpret_cast<const char*>(sizes), 8);
  lzf_bomb += "abcd";
  std::string bad_ref =
      "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nHEIGHT 1\nPOINTS 1\n"
      "DATA binary_compressed\n";
  const std::uint32_t ref_sizes[2] = {2, 12};
  bad_ref.append(reinterpret_cast<const char*>(ref_sizes), 8);
  bad_ref += std::string("\xe0\x10", 2);  // a back reference with nothing before it
  const std::string npy_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000000, 3), }\n";
  const std::string huge_npy = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(npy_dict.size()) + '\0' +
                               npy_dict + std::string(24, '\0');
  const RefusedCase cases[] = {
      {"huge.ply",
       "ply\nformat binary_little_endian 1.0\nelement vertex 99999999999999\n" + xyz + "end_header\n" +
           std::string(24, '\0'),
       CloudFormat::kPly, "header says"},
      {"huge_ascii.ply", "ply\nformat ascii 1.0\nelement vertex 4000000000\n" + xyz + "end_header\n0 0 0\n",
       CloudFormat::kPly, "header says"},
      {"overflow.ply", "ply\nformat ascii 1.0\nelement vertex 99999999999999999999999\n" + xyz + "end_header\n",
       CloudFormat::kPly, "element"},
      {"long_list.ply",
       "ply\nformat ascii 1.0\nelement vertex 1\n" + xyz +
           "property list uint uint n\nend_header\n0 0 0 4000000000 1 2\n",
       CloudFormat::kPly, "truncated"},
      {"no_end.ply", "ply\nformat ascii 1.0\nelement vertex 1\n" + xyz, CloudFormat::kPly, "end_header"},
      {"no_xyz.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float q\nend_header\n1\n", CloudFormat::kPly,
       "no x, y, z"},
      {"bad_type.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float128 x\nend_header\n", CloudFormat::kPly,
       "unknown PLY type"},
      {"garbage.ply",
       "\x7f"
       "ELF\x02\x01\x01",
       CloudFormat::kPly, "not a PLY"},
      {"huge.pcd",
       "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1000000\nHEIGHT 1000000\nDATA binary\n" +
           std::string(12, '\0'),
       CloudFormat::kPcd, "header says"},
      {"bomb.pcd", lzf_bomb, CloudFormat::kPcd, "uncompressed size"},
      {"bad_ref.pcd", bad_ref, CloudFormat::kPcd, "corrupt LZF"},
      {"mismatch.pcd", "VERSION 0.7\nFIELDS x y z\nSIZE 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n0 0 0\n",
       CloudFormat::kPcd, "different lengths"},
      {"int64.pcd", "VERSION 0.7\nFIELDS x y z t\nSIZE 4 4 4 8\nTYPE F F F U\nWIDTH 1\nDATA ascii\n0 0 0 0\n",
       CloudFormat::kPcd, "unsupported PCD field"},
      {"points.pcd", "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 2\nHEIGHT 1\nPOINTS 3\nDATA ascii\n",
       CloudFormat::kPcd, "WIDTH x HEIGHT"},
      {"odd.bin", std::string(17, '\0'), CloudFormat::kKittiBin, "not a whole number"},
      {"huge.npy", huge_npy, CloudFormat::kNpy, "truncated"},
      {"not.npy", "NUMPY", CloudFormat::kNpy, "not an .npy"},
  };
  for (const RefusedCase& c : cases) {
    const std::string m = refusal_of(dir, c);
    EXPECT_NE(m.find(c.needle), std::string::npos) << c.name << ": " << m;
  }
  EXPECT_THROW(read_point_cloud(dir.file("absent.ply")), IoError);
}

// Text PLY and PCD hold one record per line: a value too many or too few is an error at its line (read as one
// stream of numbers, it shifted every later point), and data beyond the header's count is refused.
TEST(HostileClouds, TextRecordsAreReadLineByLine) {
  CloudTempDir dir;
  const std::string ply =
      "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
      "property float z\nend_header\n";
  const std::string pcd = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 2\nHEIGHT 1\nDATA ascii\n";
  const std::string faces =
      "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
      "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";
  std::string binary =
      "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
      "property float z\nend_header\n" +
      std::string(12, '\0') + "\n";
  const RefusedCase cases[] = {
      {"extra.ply", ply + "0 0 0\n1 2 3 4\n5 6 7\n", CloudFormat::kPly,
       "line 9: item 1 of PLY element 'vertex' has more values than its 3 properties"},
      {"fewer.ply", ply + "0 0 0\n1 2\n3 4 5\n6 7 8\n", CloudFormat::kPly,
       "line 9: item 1 of PLY element 'vertex' has fewer values"},
      {"more_items.ply", ply + "0 0 0\n1 2 3\n4 5 6\n7 8 9\n", CloudFormat::kPly,
       "line 11: more data than the header's element counts"},
      {"short_list.ply", faces + "0 0 0\n3 0 0\n", CloudFormat::kPly,
       "line 11: item 0 of PLY element 'face' has fewer values than its 1 properties (lists counted"},
      {"long_list.ply", faces + "0 0 0\n1 0 0\n", CloudFormat::kPly, "line 11: item 0 of PLY element 'face' has more"},
      {"bad_value.ply", ply + "0 0 0\n1 2 x\n4 5 6\n", CloudFormat::kPly,
       "line 9: item 1 of PLY element 'vertex' has "
       "a bad value 'x' for property 'z'"},
      {"ends.ply", ply + "0.000 0.000 0.000\n1.000 2.000 3.000\n", CloudFormat::kPly,
       "the data ends at item 2 of PLY element 'vertex'"},
      {"trailing.ply", binary, CloudFormat::kPly, "1 bytes after the last element"},
      {"extra.pcd", pcd + "0 0 0 0\n1 2 3\n", CloudFormat::kPcd,
       "line 8: point 0 has more values than the 3 values of its FIELDS"},
      {"fewer.pcd", pcd + "0.00 0.00 0.00\n1.00 2.00\n", CloudFormat::kPcd, "line 9: point 1 has fewer values"},
      {"more.pcd", pcd + "0 0 0\n1 2 3\n4 5 6\n", CloudFormat::kPcd, "line 10: more data than the header's 2 POINTS"},
  };
  for (const RefusedCase& c : cases) {
    const std::string m = refusal_of(dir, c);  // the message goes on after the needle only with details
    EXPECT_EQ(m.rfind(dir.file(c.name) + ": " + c.needle, 0), 0u) << c.name << ": " << m;
  }
  // Blank lines, CRLF, tabs and trailing blanks are not values.
  const PointCloud read = read_point_cloud(dir.write("blanks.ply", ply + "\n0 0 0\r\n\n1\t2 3  \n \n4 5 6\n\n"));
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read.xyz, (std::vector<float>{0, 0, 0, 1, 2, 3, 4, 5, 6}));
  const PointCloud read_pcd = read_point_cloud(dir.write("blanks.pcd", pcd + "0 0 0\r\n\r\n7 8\t9\r\n"));
  EXPECT_EQ(read_pcd.xyz, (std::vector<float>{0, 0, 0, 7, 8, 9}));
}

// Bytes of a file quoted in a message are escaped and cut: a binary header never reaches a terminal raw.
TEST(HostileClouds, QuotedFileBytesAreEscapedAndShort) {
  CloudTempDir dir;
  const std::string junk = std::string("\x01\x02\xff\x1b[31m") + std::string(200, 'z');
  const std::string m = refusal_of(dir, {"junk.ply", "ply\n" + junk + "\nend_header\n", CloudFormat::kPly, ""});
  EXPECT_NE(m.find("unknown PLY header line '\\x01\\x02\\xff\\x1b[31mzzz"), std::string::npos) << m;
  EXPECT_NE(m.find("zzz...'"), std::string::npos) << m;
  EXPECT_LT(m.size(), dir.file("junk.ply").size() + 120) << m;
  for (const char c : m) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << m;
  // names the header gives (elements, properties, fields) are file bytes too
  const std::string name = "n\x1b[2J\x07";
  const std::string twice = refusal_of(dir, {"twice.ply",
                                             "ply\nformat ascii 1.0\nelement vertex 1\nproperty float " + name +
                                                 "\nproperty float " + name + "\nend_header\n0 0\n",
                                             CloudFormat::kPly, ""});
  EXPECT_NE(twice.find("two properties named 'n\\x1b[2J\\x07'"), std::string::npos) << twice;
  const std::string field = refusal_of(dir, {"field.pcd",
                                             "VERSION 0.7\nFIELDS x " + name +
                                                 "\nSIZE 4 3\nTYPE F F\nCOUNT 1 1\nWIDTH 1\nHEIGHT 1\n"
                                                 "POINTS 1\nDATA ascii\n0 0\n",
                                             CloudFormat::kPcd, ""});
  EXPECT_NE(field.find("'n\\x1b[2J\\x07'"), std::string::npos) << field;
  for (const std::string& text : {twice, field})
    for (const char c : text) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << text;
}

// A shared limit on the columns of a cloud file: a hostile header naming more is refused before any work,
// and a writer refuses a cloud that no reader would take back.
TEST(HostileClouds, ColumnCountIsBounded) {
  CloudTempDir dir;
  std::string ply = "ply\nformat ascii 1.0\nelement vertex 0\n";
  std::string fields;
  for (int k = 0; k <= 65536; ++k) {
    ply += "property float p" + std::to_string(k) + "\n";
    fields += " p" + std::to_string(k);
  }
  ply += "end_header\n";
  const std::string ply_path = dir.write("wide.ply", ply);
  try {
    read_point_cloud(ply_path);
    ADD_FAILURE() << "65537 properties accepted";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), ply_path + ": PLY element 'vertex' has more than 65536 properties");
  }
  const std::string pcd_path = dir.write("wide.pcd", "VERSION 0.7\nFIELDS" + fields + "\nDATA ascii\n");
  try {
    read_point_cloud(pcd_path);
    ADD_FAILURE() << "65537 fields accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("65537 fields, more than 65536"), std::string::npos) << e.what();
  }
  PointCloud wide;
  wide.resize(1);
  for (int k = 0; k < 65536 - 3; ++k) {  // not add_attribute, which looks for each name among the others
    AttributeColumn a;
    a.name = "a" + std::to_string(k);
    a.type = ScalarType::kUint8;
    a.bytes.resize(1);
    wide.attributes.push_back(std::move(a));
  }
  write_point_cloud(dir.file("ok.ply"), wide);  // x, y, z and the attributes at the limit: written and read back
  EXPECT_EQ(read_point_cloud(dir.file("ok.ply")).attributes.size(), 65536u - 3);
  wide.attributes.push_back(wide.attributes.back());
  wide.attributes.back().name = "one_more";
  for (const char* name : {"w.ply", "w.pcd", "w.npy"})
    EXPECT_THROW(write_point_cloud(dir.file(name), wide), InvalidArgument) << name;
}
