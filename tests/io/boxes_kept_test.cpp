// What a filter kept of a box table: the records in input order with rewritten scores only where they changed,
// the input positions, and the boxes to draw per image. Expected bytes written here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/io/boxes.hpp"
#include "s3d/io/overlays.hpp"

namespace s3d::io {
namespace {

// Four records of two images and two classes; the first data line is position 0, a dropped one keeps its place.
DetectionTable table() {
  const std::string csv =
      "image_id,class,x1,y1,x2,y2,score\n"
      "7,car,0,0,10,10,0.9\n"
      "7,person,1,1,5,5,0.25\n"
      "7,car,0,0,nan,10,0.5\n"
      "9,car,2,2,8,8,0.7\n"
      "9,person,3,3,6,6,0.8125\n";
  BoxReadOptions o;
  o.drop_invalid = true;
  o.format = BoxFileFormat::kCsv;
  o.display_name = "t.csv";
  return read_boxes_from_string(csv, BoxFileFormat::kCsv, o);
}

TEST(RenderKept, InputOrderAndOnlyChangedScoresRewritten) {
  const DetectionTable t = table();
  ASSERT_EQ(t.size(), 4u);
  // Kept in score order, as NMS gives them; row 3's score unchanged, row 1's decayed.
  const auto files = render_kept(t, {3, 0, 1}, {0.8125f, 0.9f, 0.125f});
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].content,
            "image_id,class,x1,y1,x2,y2,score\n"
            "7,car,0,0,10,10,0.9\n"
            "7,person,1,1,5,5,0.125\n"
            "9,person,3,3,6,6,0.8125\n");
  // Nothing changed: every record its own text.
  EXPECT_EQ(render_kept(t, {2}, {0.7f})[0].content, "image_id,class,x1,y1,x2,y2,score\n9,car,2,2,8,8,0.7\n");
  EXPECT_THROW(render_kept(t, {4}, {0.1f}), InvalidArgument);
  EXPECT_THROW(render_kept(t, {0, 1}, {0.9f}), InvalidArgument);
}

TEST(RenderPositions, TheInputPositionsOfTheRowsInTheOrderGiven) {
  const DetectionTable t = table();
  EXPECT_EQ(render_positions(t, {3, 0, 2}), "4\n0\n3\n");  // row 2 is the fourth data line (one was dropped)
  EXPECT_EQ(render_positions(t, {}), "");
  EXPECT_THROW(render_positions(t, {-1}), InvalidArgument);
}

TEST(BoxDrawings, PerImageSuppressedFirstAndLabelledKeptBoxes) {
  const DetectionTable t = table();
  const auto kept_only = box_drawings(t, {0, 3}, {0.9f, 0.8125f}, false);
  ASSERT_EQ(kept_only.size(), 2u);  // images 7 and 9, first seen first
  ASSERT_EQ(kept_only[0].size(), 1u);
  EXPECT_EQ(kept_only[0][0].label, "car 0.90");
  EXPECT_EQ(kept_only[0][0].box[2], 10.0);
  EXPECT_FALSE(kept_only[0][0].faint);
  ASSERT_EQ(kept_only[1].size(), 1u);
  EXPECT_EQ(kept_only[1][0].label, "person 0.81");
  EXPECT_NE(kept_only[1][0].colour, kept_only[0][0].colour);  // the class decides the colour

  const auto all = box_drawings(t, {0, 3}, {0.9f, 0.8125f}, true);
  ASSERT_EQ(all[0].size(), 2u);
  EXPECT_TRUE(all[0][0].faint);  // the suppressed person first, under the kept car
  EXPECT_TRUE(all[0][0].label.empty());
  EXPECT_FALSE(all[0][1].faint);
  ASSERT_EQ(all[1].size(), 2u);
  EXPECT_EQ(all[1][0].box[0], 2.0);

  DetectionTable no_images = t;
  no_images.image_field.clear();
  EXPECT_THROW(box_drawings(no_images, {0}, {0.9f}, false), DataError);
}

}  // namespace
}  // namespace s3d::io
