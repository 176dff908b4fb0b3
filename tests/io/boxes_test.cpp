// Box file formats: round trips on the real files, conversions, keys, and every bad-input case.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/io/boxes.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using s3d::io::BoxEncoding;
using s3d::io::BoxFileFormat;
using s3d::io::BoxReadOptions;
using s3d::io::DetectionTable;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::size_t> all_rows(const DetectionTable& t) {
  std::vector<std::size_t> rows(t.size());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  return rows;
}

DetectionTable from_string(const std::string& text, BoxFileFormat format, BoxReadOptions options = {}) {
  if (options.display_name.empty()) options.display_name = "mem." + s3d::io::to_string(format);
  return s3d::io::read_boxes_from_string(text, format, options);
}

/// Tables equal in what NMS and the writers use (positions renumber after a subset, so not compared).
void expect_same_content(const DetectionTable& a, const DetectionTable& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.given, b.given);
  EXPECT_EQ(a.boxes, b.boxes);
  EXPECT_EQ(a.scores, b.scores);
  EXPECT_EQ(a.image_field, b.image_field);
  EXPECT_EQ(a.class_field, b.class_field);
  ASSERT_EQ(a.keys.size(), b.keys.size());
  for (std::size_t k = 0; k < a.keys.size(); ++k) {
    EXPECT_EQ(a.keys[k].name, b.keys[k].name);
    EXPECT_EQ(a.keys[k].values, b.keys[k].values);
    EXPECT_EQ(a.keys[k].codes, b.keys[k].codes);
  }
}

/// read -> write every row -> read: same table, and writing again gives the same bytes.
void round_trip(const DetectionTable& t, BoxReadOptions again = {}) {
  const auto text = s3d::io::render_boxes(t, all_rows(t)).front().content;
  again.display_name = "again";
  DetectionTable u = s3d::io::read_boxes_from_string(text, t.format, again);
  expect_same_content(t, u);
  EXPECT_EQ(u.positions, t.positions);
  EXPECT_EQ(s3d::io::render_boxes(u, all_rows(u)).front().content, text);
}

/// Expects DataError whose message contains every piece of `parts`.
template <class Fn>
void expect_data_error(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no DataError";
  } catch (const s3d::DataError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const auto& p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Real files: every format reads, round-trips and keeps its bytes.

TEST(BoxesReal, CocoResultsRoundTripAndConvertXywh) {
  S3D_REQUIRE_DATA(path, "detections/coco_val2014_fake100/instances_val2014_fakebbox100_results.json");
  DetectionTable t = s3d::io::read_boxes(path.string());
  EXPECT_EQ(t.format, BoxFileFormat::kCocoJson);
  ASSERT_EQ(t.size(), 734u);
  EXPECT_EQ(t.image_field, "image_id");
  EXPECT_EQ(t.class_field, "category_id");
  EXPECT_EQ(t.encoding, BoxEncoding::kXywh);
  // First record: {"image_id":42,"category_id":18,"bbox":[258.15,41.29,348.26,243.78],"score":0.236}
  EXPECT_DOUBLE_EQ(t.given[2], 348.26);
  EXPECT_DOUBLE_EQ(t.boxes[0], 258.15);
  EXPECT_DOUBLE_EQ(t.boxes[2], 258.15 + 348.26);
  EXPECT_DOUBLE_EQ(t.boxes[3], 41.29 + 243.78);
  EXPECT_DOUBLE_EQ(t.scores[0], 0.236);
  EXPECT_EQ(t.key("image_id")->values[0], "42");
  EXPECT_EQ(t.positions.back(), 733u);
  round_trip(t);
  // The same boxes as the xyxy CSV copy (x2 = x + w).
  S3D_REQUIRE_DATA(csv, "detections/coco_val2014_fake100/fakebbox100_xyxy.csv");
  DetectionTable c = s3d::io::read_boxes(csv.string());
  EXPECT_EQ(c.encoding, BoxEncoding::kXyxy);
  ASSERT_EQ(c.size(), t.size());
  for (std::size_t i = 0; i < t.boxes.size(); ++i) EXPECT_NEAR(c.boxes[i], t.boxes[i], 1e-9) << i;
  EXPECT_EQ(c.key("image_id")->values, t.key("image_id")->values);
}

TEST(BoxesReal, PrettyPrintedCocoKeepsEachRecordsBytes) {
  S3D_REQUIRE_DATA(path, "detections/coco_val2017_person4/test_coco_det_AP_H_56.json");
  DetectionTable t = s3d::io::read_boxes(path.string());
  ASSERT_EQ(t.size(), 118u);
  round_trip(t);
  // Each output record is the input element verbatim (indentation included).
  const std::string original = slurp(path);
  const auto out = s3d::io::render_boxes(t, {5}).front().content;
  const auto& span = t.original.record[5];
  EXPECT_NE(out.find(original.substr(span.offset, span.size)), std::string::npos);
}

TEST(BoxesReal, CsvProposalsKeepBytesExactly) {
  S3D_REQUIRE_DATA(path, "detections/rpn_proposals_mmcv/proposals.csv");
  BoxReadOptions o;
  o.key_fields = {"level"};
  DetectionTable t = s3d::io::read_boxes(path.string(), o);
  ASSERT_EQ(t.size(), 949u);
  EXPECT_EQ(t.image_field, "");
  EXPECT_EQ(t.key("level")->values.size(), 5u);
  round_trip(t, o);
  EXPECT_EQ(s3d::io::render_boxes(t, all_rows(t)).front().content, slurp(path));
  std::int64_t groups = 0;
  auto ids = t.group_ids({"level"}, &groups);
  EXPECT_EQ(groups, 5);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 4), 149);
}

TEST(BoxesReal, MotDetectionsKeepBytesExactly) {
  S3D_REQUIRE_DATA(path, "detections/mot15_frcnn_sort/ADL-Rundle-6.det.txt");
  DetectionTable t = s3d::io::read_boxes(path.string());
  EXPECT_EQ(t.format, BoxFileFormat::kMot);
  ASSERT_EQ(t.size(), 4325u);
  EXPECT_EQ(t.image_field, "frame");
  EXPECT_EQ(t.class_field, "");
  // 1,-1,1691.97,381.048,152.23,352.617,0.995616,-1,-1,-1
  EXPECT_DOUBLE_EQ(t.boxes[2], 1691.97 + 152.23);
  EXPECT_DOUBLE_EQ(t.scores[0], 0.995616);
  round_trip(t);
  EXPECT_EQ(s3d::io::render_boxes(t, all_rows(t)).front().content, slurp(path));
}

TEST(BoxesReal, VocFolderRoundTripsThroughAFolder) {
  S3D_REQUIRE_DATA(dir, "detections/voc2007_cartucho/detection-results");
  DetectionTable t = s3d::io::read_boxes(dir.string());
  EXPECT_EQ(t.format, BoxFileFormat::kVoc);
  ASSERT_EQ(t.size(), 494u);
  EXPECT_EQ(t.original.files.size(), 85u);
  EXPECT_EQ(t.key("image")->values.size(), 84u);  // one image has no detections (an empty file)
  EXPECT_EQ(t.key("class")->values.size(), 36u);
  auto files = s3d::io::render_boxes(t, all_rows(t));
  ASSERT_EQ(files.size(), 85u);
  const fs::path out = fs::temp_directory_path() / ("s3d_voc_rt_" + std::to_string(::getpid()));
  fs::create_directories(out);
  for (const auto& f : files) {
    // Every file comes back byte for byte.
    EXPECT_EQ(f.content, slurp(dir / f.name)) << f.name;
    std::ofstream(out / f.name, std::ios::binary) << f.content;
  }
  DetectionTable u = s3d::io::read_boxes(out.string());
  expect_same_content(t, u);
  EXPECT_EQ(u.positions, t.positions);
  fs::remove_all(out);
  // A single voc file is one image named after the file.
  BoxReadOptions voc;
  voc.format = BoxFileFormat::kVoc;
  DetectionTable one = s3d::io::read_boxes((dir / "2007_000027.txt").string(), voc);
  EXPECT_EQ(one.key("image")->values, std::vector<std::string>{"2007_000027"});
}

// ---------------------------------------------------------------------------------------------------------
// Synthetic: JSON Lines, extra fields, subsets, rescoring, encodings.

TEST(Boxes, JsonLinesRoundTripKeepsExtraFields) {
  const std::string text =
      "{\"image_id\": \"a\", \"category_id\": 3, \"bbox\": [1, 2, 3, 4], \"score\": 0.5, \"track\": {\"id\": 7}}\n"
      "\n"
      "{\"image_id\": \"b\", \"category_id\": 1, \"bbox\": [0, 0, 10, 10], \"score\": 0.25, \"note\": \"x,y\"}\n";
  DetectionTable t = from_string(text, BoxFileFormat::kJsonLines);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.positions, (std::vector<std::size_t>{0, 1}));  // blank lines are not records
  EXPECT_EQ(t.key("image_id")->values, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(t.boxes[2], 4.0);
  round_trip(t);
  const std::string out = s3d::io::render_boxes(t, {1}).front().content;
  EXPECT_EQ(
      out, "{\"image_id\": \"b\", \"category_id\": 1, \"bbox\": [0, 0, 10, 10], \"score\": 0.25, \"note\": \"x,y\"}\n");
}

TEST(Boxes, JsonLinesNamedBoxKeys) {
  DetectionTable t =
      from_string("{\"x1\":1,\"y1\":2,\"x2\":5,\"y2\":6,\"conf\":0.9,\"label\":\"car\"}\n", BoxFileFormat::kJsonLines);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.encoding, BoxEncoding::kXyxy);
  EXPECT_EQ(t.class_field, "label");
  EXPECT_EQ(t.boxes, (std::vector<double>{1, 2, 5, 6}));
  EXPECT_DOUBLE_EQ(t.scores[0], 0.9);
}

TEST(Boxes, CocoExtraFieldsAndRescoredSubset) {
  const std::string text =
      "[{\"image_id\":1,\"category_id\":2,\"bbox\":[0,0,4,4],\"score\":0.9,\"segmentation\":[[1,2,3]],\"id\":11},\n"
      " {\"image_id\":1,\"category_id\":2,\"bbox\":[1,1,4,4],\"score\":0.8,\"id\":12},\n"
      " {\"image_id\":2,\"category_id\":5,\"bbox\":[9,9,1,1],\"score\":0.7,\"id\":13}]";
  DetectionTable t = from_string(text, BoxFileFormat::kCocoJson);
  ASSERT_EQ(t.size(), 3u);
  round_trip(t);
  const std::vector<double> scores{0.30000001192092896 /* float 0.3 */, std::nan("")};
  const std::string out = s3d::io::render_boxes(t, {0, 2}, &scores).front().content;
  DetectionTable u = from_string(out, BoxFileFormat::kCocoJson);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_DOUBLE_EQ(u.scores[0], 0.3);  // shortest text of the float
  EXPECT_DOUBLE_EQ(u.scores[1], 0.7);  // NaN = unchanged
  EXPECT_NE(out.find("\"segmentation\":[[1,2,3]]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"id\":11"), std::string::npos);
  EXPECT_EQ(out.find("\"id\":12"), std::string::npos);
  // The rewritten record keeps its key order.
  EXPECT_LT(out.find("\"image_id\""), out.find("\"score\":0.3"));
  EXPECT_LT(out.find("\"score\":0.3"), out.find("\"segmentation\""));
  // Empty selection: still a valid empty array.
  EXPECT_EQ(s3d::io::render_boxes(t, {}).front().content, "[]\n");
  EXPECT_EQ(from_string("[]", BoxFileFormat::kCocoJson).size(), 0u);
}

TEST(Boxes, CsvEncodingsAndExplicitColumns) {
  const std::string xywh = "id,x,y,w,h,score,extra\n7,10,20,4,6,0.5,\"a,b\"\n";
  DetectionTable t = from_string(xywh, BoxFileFormat::kCsv);
  EXPECT_EQ(t.encoding, BoxEncoding::kXywh);
  EXPECT_EQ(t.boxes, (std::vector<double>{10, 20, 14, 26}));
  round_trip(t);
  // Same columns read as centre + size.
  BoxReadOptions o;
  o.encoding = BoxEncoding::kCxcywh;
  o.box_fields = {"x", "y", "w", "h"};
  DetectionTable c = from_string(xywh, BoxFileFormat::kCsv, o);
  EXPECT_EQ(c.boxes, (std::vector<double>{8, 17, 12, 23}));
  // Named columns under other names; the quoted field with a comma stays one field.
  BoxReadOptions named;
  named.encoding = BoxEncoding::kXyxy;
  named.box_fields = {"a", "b", "c", "d"};
  DetectionTable n = from_string("a,b,c,d,score,tag\n1,2,3,4,0.1,\"p,q\"\n", BoxFileFormat::kCsv, named);
  EXPECT_EQ(n.boxes, (std::vector<double>{1, 2, 3, 4}));
  const std::vector<double> s{0.5};
  EXPECT_EQ(s3d::io::render_boxes(n, {0}, &s).front().content, "a,b,c,d,score,tag\n1,2,3,4,0.5,\"p,q\"\n");
  // CRLF and a BOM are accepted, and written back as read (a Windows tool gets its own file's form again).
  DetectionTable crlf = from_string("\xEF\xBB\xBFx1,y1,x2,y2,score\r\n0,0,1,1,0.5\r\n", BoxFileFormat::kCsv);
  ASSERT_EQ(crlf.size(), 1u);
  EXPECT_DOUBLE_EQ(crlf.scores[0], 0.5);
  EXPECT_EQ(s3d::io::render_boxes(crlf, {0}).front().content, "\xEF\xBB\xBFx1,y1,x2,y2,score\r\n0,0,1,1,0.5\r\n");
  // Columns are looked up by name without case: a second `Score` would be ambiguous.
  try {
    from_string("x1,y1,x2,y2,score,Score\n0,0,1,1,0.5,0.6\n", BoxFileFormat::kCsv);
    ADD_FAILURE() << "duplicate column accepted";
  } catch (const s3d::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("'Score' appears twice (columns 5 and 6)"), std::string::npos) << e.what();
  }
}

TEST(Boxes, RotatedBoxesPassThrough) {
  BoxReadOptions o;
  o.rotated = true;
  DetectionTable t = from_string("cx,cy,w,h,angle,score\n5,5,4,2,0.5,0.9\n", BoxFileFormat::kCsv, o);
  EXPECT_EQ(t.box_dim(), 5);
  EXPECT_EQ(t.boxes, (std::vector<double>{5, 5, 4, 2, 0.5}));
  DetectionTable j = from_string("[{\"bbox\":[5,5,4,2,0.5],\"score\":0.9}]", BoxFileFormat::kCocoJson, o);
  EXPECT_EQ(j.boxes, t.boxes);
  EXPECT_THROW(from_string("1,-1,0,0,1,1,0.5\n", BoxFileFormat::kMot, o), s3d::DataError);
}

TEST(Boxes, GroupIdsCombineFieldsDensely) {
  const std::string text =
      "image_id,category_id,x1,y1,x2,y2,score\n"
      "1,1,0,0,1,1,0.1\n1,2,0,0,1,1,0.2\n2,1,0,0,1,1,0.3\n1,1,0,0,1,1,0.4\n2,2,0,0,1,1,0.5\n";
  DetectionTable t = from_string(text, BoxFileFormat::kCsv);
  std::int64_t g = 0;
  EXPECT_EQ(t.group_ids({"image_id", "category_id"}, &g), (std::vector<std::int64_t>{0, 1, 2, 0, 3}));
  EXPECT_EQ(g, 4);
  EXPECT_EQ(t.group_ids({"category_id"}, &g), (std::vector<std::int64_t>{0, 1, 0, 0, 1}));
  EXPECT_EQ(g, 2);
  EXPECT_EQ(t.group_ids({}, &g), (std::vector<std::int64_t>(5, 0)));
  EXPECT_EQ(g, 1);
  EXPECT_THROW(t.group_ids({"nope"}), s3d::InvalidArgument);
}

TEST(Boxes, FormatNamesAndDetection) {
  EXPECT_EQ(s3d::io::parse_box_file_format("COCO"), BoxFileFormat::kCocoJson);
  EXPECT_EQ(s3d::io::parse_box_file_format("ndjson"), BoxFileFormat::kJsonLines);
  EXPECT_THROW(s3d::io::parse_box_file_format("xml"), s3d::InvalidArgument);
  EXPECT_EQ(s3d::io::parse_box_encoding("cxcywh"), BoxEncoding::kCxcywh);
  EXPECT_THROW(s3d::io::parse_box_encoding("xyzw"), s3d::InvalidArgument);
  EXPECT_EQ(s3d::io::box_file_format_from_extension("a/b.det.txt"), BoxFileFormat::kMot);
  EXPECT_EQ(s3d::io::box_file_format_from_extension("a/b.txt"), std::nullopt);
  const fs::path dir = fs::temp_directory_path() / ("s3d_detect_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto sniffed = [&](const std::string& content) {
    std::ofstream(dir / "x.txt") << content;
    return s3d::io::detect_box_file_format((dir / "x.txt").string());
  };
  EXPECT_EQ(sniffed("  [{\"bbox\":[1,2,3,4]}]"), BoxFileFormat::kCocoJson);
  EXPECT_EQ(sniffed("{\"bbox\":[1,2,3,4]}\n"), BoxFileFormat::kJsonLines);
  EXPECT_EQ(sniffed("x1,y1,x2,y2,score\n"), BoxFileFormat::kCsv);
  EXPECT_EQ(sniffed("1,-1,2,3,4,5,0.9,-1,-1,-1\n"), BoxFileFormat::kMot);
  EXPECT_EQ(sniffed("dog 0.5 1 2 3 4\n"), BoxFileFormat::kVoc);
  EXPECT_EQ(s3d::io::detect_box_file_format(dir.string()), BoxFileFormat::kVoc);
  fs::remove_all(dir);
  EXPECT_EQ(s3d::io::format_number(static_cast<float>(0.1)), "0.1");
  EXPECT_EQ(s3d::io::format_number(0.1), "0.1");
  EXPECT_EQ(s3d::io::format_number(0.30000000000000004), "0.30000000000000004");  // not a float: as a double
  EXPECT_EQ(s3d::io::format_number(0.9999731779098511), "0.9999732");             // exactly a float: its shortest text
}

// ---------------------------------------------------------------------------------------------------------
// Bad input: one-line DataError naming the file and the record; --drop-invalid skips and counts.

TEST(BoxesBadInput, EachCaseNamesFileAndRecord) {
  struct Case {
    BoxFileFormat format;
    std::string text;
    std::vector<std::string> parts;  // expected in the message (besides the file name)
  };
  const std::vector<Case> cases{
      {BoxFileFormat::kCsv, "x1,y1,x2,y2,score\n0,0,1,1,0.5\n0,0,1,1,nan\n", {"line 3", "score is NaN"}},
      {BoxFileFormat::kCsv, "x1,y1,x2,y2,score\n0,0,1,1,0.5\n0,inf,1,1,0.5\n", {"line 3", "y1 is infinite"}},
      {BoxFileFormat::kCsv, "x1,y1,x2,y2,score\n0,0,1,1,0.5\n0,0,1,,0.5\n", {"line 3", "y2 is missing"}},
      {BoxFileFormat::kCsv, "x1,y1,x2,y2,score\n0,0,1,1,0.5\n0,0,1,1,high\n", {"line 3", "score is not a number"}},
      {BoxFileFormat::kCsv, "x1,y1,x2,y2,score\n0,0,1,1,0.5\n0,0,1,1\n", {"line 3", "has 4 fields"}},
      {BoxFileFormat::kCsv, "x1,y1,x2,y2,score\n0,0,1,1,0.5\n0,0,1e39,1,0.5\n", {"line 3", "x2 is out of float range"}},
      {BoxFileFormat::kMot, "1,-1,0,0,1,1,0.5\n1,-1,0,NaN,1,1,0.5\n", {"line 2", "bb_top is NaN"}},
      {BoxFileFormat::kMot, "1,-1,0,0,1,1,0.5\n1,-1,0,0,1,1\n", {"line 2", "has 6 fields"}},
      {BoxFileFormat::kVoc, "dog 0.5 0 0 1 1\ncat 0.5 0 0 x 1\n", {"line 2", "right is not a number"}},
      {BoxFileFormat::kVoc, "dog 0.5 0 0 1 1\ncat 0.5 0 0\n", {"line 2", "has 4 fields"}},
      {BoxFileFormat::kJsonLines,
       "{\"bbox\":[0,0,1,1],\"score\":0.5}\n{\"bbox\":[0,0,1,1]}\n",
       {"line 2", "score is missing"}},
      {BoxFileFormat::kJsonLines,
       "{\"bbox\":[0,0,1,1],\"score\":0.5}\n{\"bbox\":[0,0,1,1],\"score\":\"0.5\"}\n",
       {"line 2", "score is not a number"}},
      {BoxFileFormat::kJsonLines,
       "{\"bbox\":[0,0,1,1],\"score\":0.5}\n{\"bbox\":[0,0,1],\"score\":0.5}\n",
       {"line 2", "bbox is not an array of 4 numbers"}},
      {BoxFileFormat::kJsonLines,
       "{\"bbox\":[0,0,1,1],\"score\":0.5}\n{\"bbox\":[0,0,1,1],\"score\":0.5\n",
       {"line 2", "invalid JSON"}},
      {BoxFileFormat::kCocoJson,
       "[{\"bbox\":[0,0,1,1],\"score\":0.5},\n {\"bbox\":[0,\"0\",1,1],\"score\":0.5}]",
       {"record 2 (line 2)", "bbox[1] is not a number"}},
      {BoxFileFormat::kCocoJson,
       "[{\"bbox\":[0,0,1,1],\"score\":0.5},\n\n {\"bbox\":[0,0,1,1],\"score\":NaN}]",
       {"record 2 (line 3)", "NaN"}},
      {BoxFileFormat::kCocoJson,
       "[{\"bbox\":[0,0,1,1],\"score\":0.5}, {\"bbox\":[0,-Infinity,1,1],\"score\":1}]",
       {"record 2", "-Infinity"}},
      {BoxFileFormat::kCocoJson, "[{\"bbox\":[0,0,1,1],\"score\":0.5}, 3]", {"record 2", "not a JSON object"}},
      {BoxFileFormat::kCocoJson,
       "[{\"bbox\":[0,0,1,1],\"score\":0.5}, {\"score\":0.5,\"bbox\":null}]",
       {"record 2", "bbox is missing"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    BoxReadOptions o;
    o.display_name = "bad." + s3d::io::to_string(c.format);
    auto parts = c.parts;
    parts.push_back("bad." + s3d::io::to_string(c.format) + ": ");
    expect_data_error([&] { s3d::io::read_boxes_from_string(c.text, c.format, o); }, parts);
    // Dropped instead: the good first record remains, with its position, and the count says one.
    o.drop_invalid = true;
    DetectionTable t = s3d::io::read_boxes_from_string(c.text, c.format, o);
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(t.records_in, 2u);
    EXPECT_EQ(t.dropped_invalid, 1u);
    ASSERT_EQ(t.dropped_reasons.size(), 1u);
    EXPECT_NE(t.dropped_reasons[0].find(c.parts[0]), std::string::npos);
    EXPECT_EQ(t.positions, std::vector<std::size_t>{0});
  }
}

TEST(BoxesBadInput, DroppedRecordsKeepLaterPositions) {
  BoxReadOptions o;
  o.drop_invalid = true;
  DetectionTable t = from_string("x1,y1,x2,y2,score\n0,0,1,1,nan\n0,0,1,1,0.5\n", BoxFileFormat::kCsv, o);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.positions, std::vector<std::size_t>{1});  // the input position, not the row
}

TEST(BoxesBadInput, FileLevelErrorsAreNotDroppable) {
  BoxReadOptions o;
  o.drop_invalid = true;
  o.display_name = "f";
  expect_data_error([&] { s3d::io::read_boxes_from_string("a,b,score\n1,2,3\n", BoxFileFormat::kCsv, o); },
                    {"f: line 1 (header)", "no box columns"});
  expect_data_error([&] { s3d::io::read_boxes_from_string("x1,y1,x2,y2\n1,2,3,4\n", BoxFileFormat::kCsv, o); },
                    {"f: line 1 (header)", "no score column"});
  expect_data_error([&] { s3d::io::read_boxes_from_string("", BoxFileFormat::kCsv, o); }, {"f: empty CSV"});
  expect_data_error([&] { s3d::io::read_boxes_from_string("{\"a\":1}", BoxFileFormat::kCocoJson, o); },
                    {"f: expected a JSON array"});
  expect_data_error(
      [&] {
        s3d::io::read_boxes_from_string("[{\"bbox\":[0,0,1,1],\"score\":0.5},\n{\"bbox\":[0,", BoxFileFormat::kCocoJson,
                                        o);
      },
      {"f: record 2 (line 2)", "unterminated"});
  expect_data_error(
      [&] { s3d::io::read_boxes_from_string("[{\"bbox\":[0,0,1,1],\"score\":0.5}] x", BoxFileFormat::kCocoJson, o); },
      {"f: line 1", "after the JSON array"});
  BoxReadOptions k = o;
  k.key_fields = {"level"};
  expect_data_error([&] { s3d::io::read_boxes_from_string("x1,y1,x2,y2,score\n1,2,3,4,1\n", BoxFileFormat::kCsv, k); },
                    {"f: line 1 (header)", "no column 'level'"});
  expect_data_error([&] { s3d::io::read_boxes_from_string("1,-1,0,0,1,1,0.5\n", BoxFileFormat::kMot, k); },
                    {"f: no field 'level'"});
  EXPECT_THROW(s3d::io::read_boxes("/nonexistent/dets.json"), s3d::IoError);
}

TEST(BoxesBadInput, JsonShapesAndTypes) {
  auto read = [](const std::string& record) {
    BoxReadOptions o;
    o.display_name = "j";
    return s3d::io::read_boxes_from_string("[{\"bbox\":[0,0,1,1],\"score\":0.5,\"image_id\":1},\n" + record + "]",
                                           BoxFileFormat::kCocoJson, o);
  };
  expect_data_error([&] { read("{\"bbox\":[[0],0,1,1],\"score\":0.5,\"image_id\":1}"); },
                    {"record 2", "bbox[0] is not a number"});
  expect_data_error([&] { read("{\"bbox\":[0,0,1,{}],\"score\":0.5,\"image_id\":1}"); },
                    {"record 2", "bbox[3] is not a number"});
  expect_data_error([&] { read("{\"bbox\":[0,0,1,1,5],\"score\":0.5,\"image_id\":1}"); },
                    {"record 2", "not an array of 4"});
  expect_data_error([&] { read("{\"bbox\":{\"x\":1},\"score\":0.5,\"image_id\":1}"); },
                    {"record 2", "not an array of 4"});
  expect_data_error([&] { read("{\"bbox\":[0,0,1,1],\"score\":true,\"image_id\":1}"); },
                    {"record 2", "score is not a number"});
  expect_data_error([&] { read("{\"bbox\":[0,0,1,1],\"score\":0.5}"); }, {"record 2", "image_id is missing"});
  expect_data_error([&] { read("{\"bbox\":[0,0,1,1],\"score\":0.5,\"image_id\":[1]}"); },
                    {"record 2", "image_id is not a single value"});
  expect_data_error([&] { read("{\"bbox\":[0,0,1,1],\"score\":1e999,\"image_id\":1}"); },
                    {"record 2", "number overflow"});
  // Nested extra fields are ignored by the reader and kept by the writer.
  DetectionTable t =
      read("{\"bbox\":[2,2,1,1],\"score\":0.25,\"image_id\":\"x\",\"extra\":{\"bbox\":[9],\"score\":\"no\"}}");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t.scores[1], 0.25);
  EXPECT_EQ(t.boxes[4], 2.0);
  EXPECT_EQ(t.key("image_id")->values, (std::vector<std::string>{"1", "x"}));
  // A forgotten --rotated is an error, not a silently ignored angle.
  expect_data_error([] { from_string("cx,cy,w,h,angle,score\n1,1,1,1,0.3,1\n", BoxFileFormat::kCsv); },
                    {"give --rotated"});
}

TEST(BoxesBadInput, TruncatedFilesFailCleanly) {
  // Cut each real file at many places: reading either succeeds or throws an s3d error (never crashes or throws
  // anything else); with drop_invalid a cut inside a record at most drops that record.
  S3D_REQUIRE_DATA(data, "detections");
  const std::vector<std::pair<std::string, BoxFileFormat>> files{
      {"coco_val2017_person4/test_coco_det_AP_H_56.json", BoxFileFormat::kCocoJson},
      {"coco_val2014_fake100/fakebbox100_xyxy.csv", BoxFileFormat::kCsv},
      {"mot15_frcnn_sort/TUD-Campus.det.txt", BoxFileFormat::kMot},
      {"voc2007_cartucho/detection-results/2007_000027.txt", BoxFileFormat::kVoc}};
  int outcomes[2] = {0, 0};
  for (const auto& [name, format] : files) {
    const std::string text = slurp(data / name);
    for (int k = 1; k < 60; ++k) {
      const std::size_t cut = text.size() * static_cast<std::size_t>(k) / 60;
      for (bool drop : {false, true}) {
        BoxReadOptions o;
        o.drop_invalid = drop;
        o.display_name = name;
        try {
          DetectionTable t = s3d::io::read_boxes_from_string(text.substr(0, cut), format, o);
          EXPECT_LE(t.dropped_invalid, 1u) << name << " cut " << cut;
          ++outcomes[0];
        } catch (const s3d::Error& e) {
          EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
          ++outcomes[1];
        }
      }
    }
  }
  EXPECT_GT(outcomes[0], 0);
  EXPECT_GT(outcomes[1], 0);
}
