#include "s3d/io/stereo_datasets.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::io {
namespace {

bool is_image(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return e == ".png" || e == ".jpg" || e == ".jpeg" || e == ".ppm" || e == ".pgm" || e == ".tif" || e == ".tiff" ||
         e == ".bmp";
}

// A Middlebury scene folder -> one record, or null.
nlohmann::json middlebury_scene(const fs::path& dir, double gt_scale) {
  struct Layout {
    const char* left;
    const char* right;
    std::vector<const char*> gts;
    bool needs_scale;
  };
  const Layout layouts[] = {{"im0.png", "im1.png", {"disp0GT.pfm", "disp0.pfm"}, false},
                            {"imL.png", "imR.png", {"groundtruth.png", "disp2.png"}, false},
                            {"view1.png", "view5.png", {"disp1.png"}, true}};
  for (const Layout& l : layouts) {
    if (!fs::is_regular_file(dir / l.left) || !fs::is_regular_file(dir / l.right)) continue;
    nlohmann::json r{
        {"left", (dir / l.left).string()}, {"right", (dir / l.right).string()}, {"name", dir.filename().string()}};
    for (const char* g : l.gts) {
      const fs::path gt = dir / g;
      if (!fs::is_regular_file(gt)) continue;
      if (l.needs_scale && gt_scale <= 0.0) break;
      r["gt"] = gt.string();
      if (gt_scale > 0.0 && gt.extension() != ".pfm") r["gt_scale"] = gt_scale;
      break;
    }
    if (fs::is_regular_file(dir / "calib.txt")) r["calib"] = (dir / "calib.txt").string();
    return r;
  }
  return nullptr;
}

}  // namespace

std::vector<nlohmann::json> stereo_dataset_items(const std::string& folder, double gt_scale) {
  const fs::path dir(folder);
  std::vector<nlohmann::json> items;
  if (fs::is_directory(dir / "image_2") && fs::is_directory(dir / "image_3")) {
    // Every image of either side, so that one without its partner becomes a failed item, never a silent gap.
    std::vector<fs::path> names;
    for (const char* side : {"image_2", "image_3"})
      for (const auto& e : fs::directory_iterator(dir / side))
        if (e.is_regular_file() && is_image(e.path())) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (const fs::path& name : names) {
      const fs::path l = dir / "image_2" / name, r = dir / "image_3" / name;
      nlohmann::json rec{{"left", l.string()}, {"right", r.string()}, {"name", l.stem().string()}};
      const bool has_left = fs::is_regular_file(l), has_right = fs::is_regular_file(r);
      if (!has_left || !has_right) {
        rec["unpaired"] = has_left ? l.string() + ": no right image (" + r.string() + " is missing)"
                                   : r.string() + ": no left image (" + l.string() + " is missing)";
        items.push_back(rec);
        continue;
      }
      for (const char* g : {"disp_occ_0", "disp_noc_0", "disp_occ", "disp_noc"}) {
        const fs::path gt = dir / g / l.filename();
        if (fs::is_regular_file(gt)) {
          rec["gt"] = gt.string();
          break;
        }
      }
      // KITTI 2015 frames are <seq>_<frame>.png; the calibration is per sequence: <seq>.txt.
      const std::string stem = l.stem().string();
      const fs::path calib = dir / "calib_cam_to_cam" / (stem.substr(0, stem.find('_')) + ".txt");
      if (fs::is_regular_file(calib)) rec["calib"] = calib.string();
      items.push_back(rec);
    }
  } else if (auto one = middlebury_scene(dir, gt_scale); !one.is_null()) {
    items.push_back(one);
  } else if (fs::is_directory(dir)) {
    std::vector<fs::path> subs;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory()) subs.push_back(e.path());
    std::sort(subs.begin(), subs.end());
    for (const fs::path& s : subs)
      if (auto r = middlebury_scene(s, gt_scale); !r.is_null()) items.push_back(r);
  }
  if (items.empty())
    throw DataError(folder +
                    ": no stereo pairs found (expected image_2/ + image_3/, im0/im1, imL/imR or "
                    "view1/view5, or subfolders holding them)");
  return items;
}

double middlebury_gt_scale(const std::string& gt_path) {
  std::ifstream in(fs::path(gt_path).parent_path() / "info.txt");
  double scale = 0.0;
  if (!(in >> scale) || !(scale > 0.0)) return 0.0;
  return scale;
}

std::vector<std::pair<std::string, std::string>> middlebury_mask_files(const std::string& gt_path) {
  std::vector<std::pair<std::string, std::string>> found;
  const fs::path dir = fs::path(gt_path).parent_path();
  for (const char* region : {"nonocc", "all", "disc"}) {
    const fs::path p = dir / (std::string(region) + ".png");
    std::error_code ec;
    if (fs::exists(p, ec)) found.emplace_back(region, p.string());
  }
  return found;
}

}  // namespace s3d::io
