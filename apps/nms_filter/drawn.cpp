#include "drawn.hpp"

#include <filesystem>
#include <set>

#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/overlays.hpp"

namespace fs = std::filesystem;

namespace s3d::nms_filter {
namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_number(const std::string& s) {
  return !s.empty() && s.size() <= 12 && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::string find_image(const std::string& value, const std::string& folder) {
  if (value.empty()) return "";
  const fs::path dir(folder.empty() ? "." : folder);
  if (is_file(dir / value)) return (dir / value).string();
  std::vector<std::string> stems{value};
  if (is_number(value)) {
    for (std::size_t digits : {6u, 12u})
      if (value.size() < digits) stems.push_back(std::string(digits - value.size(), '0') + value);
  }
  for (const std::string& stem : stems)
    for (const char* ext : {".png", ".jpg", ".jpeg", ".PNG", ".JPG", ".JPEG"})
      if (is_file(dir / (stem + ext))) return (dir / (stem + ext)).string();
  return "";
}

std::size_t write_drawn(cli::ItemContext& ctx, const KeptBoxes& kept, const Plan& plan) {
  const BoxJob& job = kept.job;
  const io::DetectionTable& table = job.table;
  const io::KeyColumn* images = table.key(table.image_field);
  if (images == nullptr) throw DataError(table.source + ": --emit drawn: the records name no image");
  // Images are looked up beside the input unless --image-dir says where (stdin: the working folder).
  const std::string folder = !plan.image_dir.empty() ? plan.image_dir
                             : job.input == "-"      ? "."
                                                     : fs::path(job.input).parent_path().string();

  const std::vector<std::vector<io::BoxDrawing>> drawings =
      io::box_drawings(table, kept.result.keep, kept.result.scores, plan.draw_suppressed);

  struct Picture {
    std::string image, name;
  };
  std::vector<Picture> pictures;
  std::set<std::string> names;
  for (std::size_t i = 0; i < images->values.size(); ++i) {
    const std::string& value = images->values[i];
    const std::string image = find_image(value, folder);
    if (image.empty())
      throw DataError(table.source + ": --emit drawn: no image file for " + table.image_field + " " + value + " in " +
                      (folder.empty() ? "." : folder) + " (tried the name, with .png/.jpg/.jpeg" +
                      (is_number(value) ? ", zero-padded to 6 and 12 digits" : "") + "); give --image-dir");
    std::string name = fs::path(image).stem().string();
    if (!names.insert(name).second) name += "_" + std::to_string(i);  // two folders' images of one name
    names.insert(name);
    pictures.push_back({image, name + ".png"});
  }
  ctx.write_folder_atomically(job.drawn, [&](const std::string& dir) {
    for (std::size_t i = 0; i < pictures.size(); ++i) {
      const io::ImageU8 image = io::read_rgb8(pictures[i].image);
      io::write_image((fs::path(dir) / pictures[i].name).string(), io::draw_boxes(image, drawings[i]));
    }
  });
  return pictures.size();
}

}  // namespace s3d::nms_filter
