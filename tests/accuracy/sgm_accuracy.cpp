// sgm-accuracy: s3d SGM (CPU) beside OpenCV StereoSGBM (3-way, HH) on every scene of ../shared/data/stereo,
// same process, same grey pair, same D. Writes the markdown table of docs/ACCURACY.md and JSON Lines.
//
//   sgm-accuracy [--data DIR] [--scene SUBSTR] [--no-sgbm] [--p1 N --p2 N --census 9x7 --uniqueness N
//                 --paths N --lr-method volume|right-sgm] [--fill|--no-fill] [--markdown FILE] [--json FILE]
//
// The library's defaults (SgmParams) unless flags say otherwise; --no-fill turns the occlusion fill
// (SgmParams::fill, on by default) off, --fill on. Besides the two tables
// (columns x >= D, full frame) the markdown states the accuracy targets per scene and mask: (a) <= 0.8 x
// SGBM 3-way's (a), (b) <= SGBM 3-way's (b) (KITTI: D1).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "s3d/core/errors.hpp"
#include "scenes.hpp"

using namespace s3d;
using nlohmann::json;

namespace {

std::string pct(double v) {
  if (!std::isfinite(v)) return "–";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

struct Row {
  std::string scene, method;
  int d = 0;
  double seconds = 0.0;
  stereo::EvalResult fair, full;
};

}  // namespace

int main(int argc, char** argv) {
  std::string data = std::getenv("S3D_DATA_DIR") ? std::getenv("S3D_DATA_DIR") : S3D_DEFAULT_DATA_DIR;
  data += "/stereo";
  std::string scene_filter, markdown_path, json_path;
  bool with_sgbm = true;
  int sgbm_block = 3;
  stereo::SgmParams base;
  std::string census, lr_method;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sgm-accuracy: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data")
      data = next();
    else if (a == "--scene")
      scene_filter = next();
    else if (a == "--no-sgbm")
      with_sgbm = false;
    else if (a == "--p1")
      base.p1 = std::stoi(next());
    else if (a == "--p2")
      base.p2 = std::stoi(next());
    else if (a == "--uniqueness")
      base.uniqueness = std::stoi(next());
    else if (a == "--paths")
      base.paths = std::stoi(next());
    else if (a == "--census")
      census = next();
    else if (a == "--lr-check")
      base.lr_max_diff = std::stof(next());
    else if (a == "--lr-method")
      lr_method = next();
    else if (a == "--no-lr-check")
      base.lr_check = false;
    else if (a == "--speckle-size")
      base.speckle_size = std::stoi(next());
    else if (a == "--speckle-range")
      base.speckle_range = std::stof(next());
    else if (a == "--no-median")
      base.median = false;
    else if (a == "--no-subpixel")
      base.subpixel = false;
    else if (a == "--fill")
      base.fill = true;
    else if (a == "--no-fill")
      base.fill = false;
    else if (a == "--sgbm-block")
      sgbm_block = std::stoi(next());
    else if (a == "--markdown")
      markdown_path = next();
    else if (a == "--json")
      json_path = next();
    else {
      std::fprintf(stderr, "sgm-accuracy: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  try {
    if (!census.empty()) stereo::parse_census(census, base.census, base.census_width, base.census_height);
    if (!lr_method.empty()) base.lr_method = stereo::parse_lr_method(lr_method);
    base.validate();
  } catch (const Error& e) {
    std::fprintf(stderr, "sgm-accuracy: %s\n", e.what());
    return 2;
  }

  std::vector<Row> rows;
  std::ofstream json_out;
  if (!json_path.empty()) json_out.open(json_path);
  for (const accuracy::Scene& sc : accuracy::scenes()) {
    if (!scene_filter.empty()) {  // comma-separated substrings
      bool match = false;
      std::istringstream parts(scene_filter);
      for (std::string part; std::getline(parts, part, ',');) match = match || sc.name.find(part) != std::string::npos;
      if (!match) continue;
    }
    accuracy::LoadedScene s;
    try {
      s = accuracy::load(sc, data);
    } catch (const Error& e) {
      std::fprintf(stderr, "sgm-accuracy: skipping %s: %s\n", sc.name.c_str(), e.what());
      continue;
    }
    stereo::SgmParams p = base;
    p.disparities = sc.disparities;
    struct Run {
      std::string method;
      io::ImageF disp;
      double seconds;
    };
    std::vector<Run> runs;
    double t = 0;
    io::ImageF ours = accuracy::run_ours(s, p, &t);
    runs.push_back({p.fill ? "s3d SGM" : "s3d SGM (no fill)", std::move(ours), t});
    if (with_sgbm) {
      io::ImageF a = accuracy::run_sgbm(s, sc.disparities, accuracy::SgbmMode::kThreeWay, &t, sgbm_block);
      runs.push_back({"SGBM 3-way", std::move(a), t});
      io::ImageF b = accuracy::run_sgbm(s, sc.disparities, accuracy::SgbmMode::kHH, &t, sgbm_block);
      runs.push_back({"SGBM HH", std::move(b), t});
    }
    for (Run& r : runs) {
      Row row{sc.name,
              r.method,
              sc.disparities,
              r.seconds,
              stereo::evaluate_disparity(r.disp.cview(), s.gt.cview(), s.masks,
                                         accuracy::fair_columns(s.gt.width, sc.disparities)),
              stereo::evaluate_disparity(r.disp.cview(), s.gt.cview(), s.masks)};
      if (json_out) {
        json j{{"scene", sc.name},
               {"method", r.method},
               {"disparities", sc.disparities},
               {"seconds", r.seconds},
               {"fair", io::to_json(row.fair)},
               {"full", io::to_json(row.full)},
               {"params",
                {{"p1", p.p1},
                 {"p2", p.p2},
                 {"census_bits", p.census_bits()},
                 {"uniqueness", p.uniqueness},
                 {"paths", p.paths},
                 {"fill", p.fill}}}};
        json_out << j.dump() << "\n";
      }
      const stereo::RegionErrors* all = row.fair.find("all");
      const stereo::RegionErrors* non = row.fair.find("nonocc");
      std::fprintf(stderr, "%-26s %-11s D%-4d bad2(a) all %6s nonocc %6s | (b) all %6s nonocc %6s | dens %6s | %.2fs\n",
                   sc.name.c_str(), r.method.c_str(), sc.disparities, pct(all ? all->bad2_all : NAN).c_str(),
                   pct(non ? non->bad2_all : NAN).c_str(), pct(all ? all->bad2_est : NAN).c_str(),
                   pct(non ? non->bad2_est : NAN).c_str(), pct(row.fair.density).c_str(), r.seconds);
      rows.push_back(std::move(row));
    }
  }

  // Markdown: one table over the fair columns (x >= D), one over the full frame.
  std::ostringstream md;
  md << "s3d SGM (CPU): census " << base.census_width << "x" << base.census_height
     << (base.census == stereo::CensusKind::kFull ? " full" : " centre-symmetric") << ", " << base.paths
     << " paths, P1 " << base.p1 << ", P2 " << base.p2 << ", uniqueness " << base.uniqueness << ", LR check "
     << (base.lr_check
             ? std::to_string(base.lr_max_diff).substr(0, 4) + " px (" + stereo::lr_method_name(base.lr_method) + ")"
             : std::string("off"))
     << ", subpixel " << (base.subpixel ? "on" : "off") << ", median " << (base.median ? "on" : "off") << ", speckle "
     << base.speckle_size << " px / " << base.speckle_range << " px, fill " << (base.fill ? "on" : "off") << ".  \n"
     << "OpenCV " << accuracy::opencv_version() << " StereoSGBM: block " << sgbm_block << ", P1 "
     << 8 * sgbm_block * sgbm_block << " (8*block^2), P2 " << 32 * sgbm_block * sgbm_block
     << " (32*block^2), uniquenessRatio 10, speckleWindowSize 100, speckleRange 2 (OpenCV scales it by 16: 2 px), "
        "disp12MaxDiff 1, preFilterCap 63; same grey images, minDisparity 0, numDisparities D.\n\n";
  for (int pass = 0; pass < 2; ++pass) {
    md << (pass == 0 ? "#### Columns x >= D (where every disparity of the range exists; SGBM's empty band excluded)\n\n"
                     : "#### Full frame (SGBM's empty left band counts as invalid)\n\n");
    md << "| scene | D | method | density % | bad-2 all (a) | bad-2 all (b) | bad-2 nonocc (a) | bad-2 nonocc (b) | "
          "D1 (a) | D1 (b) | avg err (b) | (a) / SGBM 3-way (a) |\n";
    md << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const stereo::EvalResult& ev = pass == 0 ? r.fair : r.full;
      const stereo::RegionErrors* all = ev.find("all");
      const stereo::RegionErrors* non = ev.find("nonocc");
      const bool kitti = r.scene.rfind("kitti", 0) == 0;
      std::string ratio = "";
      if (r.method.rfind("s3d SGM", 0) == 0 && i + 1 < rows.size() && rows[i + 1].method == "SGBM 3-way") {
        const stereo::EvalResult& sg = pass == 0 ? rows[i + 1].fair : rows[i + 1].full;
        const auto* sa = sg.find("all");
        const auto* sn = sg.find("nonocc");
        ratio = pct(all->bad2_all / sa->bad2_all);
        if (non && sn) ratio += " / " + pct(non->bad2_all / sn->bad2_all);
      }
      md << "| " << r.scene << " | " << r.d << " | " << r.method << " | " << pct(ev.density) << " | "
         << pct(all ? all->bad2_all : NAN) << " | " << pct(all ? all->bad2_est : NAN) << " | "
         << pct(non ? non->bad2_all : NAN) << " | " << pct(non ? non->bad2_est : NAN) << " | "
         << (kitti ? pct(all->d1_all) : "–") << " | " << (kitti ? pct(all->d1_est) : "–") << " | "
         << pct(all ? all->avg_err_est : NAN) << " | " << ratio << " |\n";
    }
    md << "\n";
  }
  // The accuracy targets (docs/ACCURACY.md), per scene and mask (KITTI: D1 over "all"), against SGBM 3-way; HH's (b)
  // beside.
  for (int pass = 0; pass < 2; ++pass) {
    md << (pass == 0 ? "#### Targets, columns x >= D\n\n" : "#### Targets, full frame\n\n");
    md << "| scene | region | s3d (a) | SGBM 3-way (a) | ratio (a) <= 0.8? | s3d (b) | SGBM 3-way (b) | (b) <= SGBM? | "
          "vs HH (b) | both? |\n|---|---|---|---|---|---|---|---|---|---|\n";
    int met_a = 0, met_b = 0, met_both = 0, pairs = 0;
    for (std::size_t i = 0; i + 2 < rows.size(); ++i) {
      if (rows[i].method.rfind("s3d SGM", 0) != 0 || rows[i + 1].method != "SGBM 3-way" ||
          rows[i + 2].method != "SGBM HH")
        continue;
      const bool kitti = rows[i].scene.rfind("kitti", 0) == 0;
      auto ev = [&](std::size_t k) -> const stereo::EvalResult& { return pass == 0 ? rows[k].fair : rows[k].full; };
      for (const char* region : {"all", "nonocc"}) {
        const stereo::RegionErrors* o = ev(i).find(region);
        const stereo::RegionErrors* s3 = ev(i + 1).find(region);
        const stereo::RegionErrors* hh = ev(i + 2).find(region);
        if (!o || !s3 || !hh) continue;
        const double oa = kitti ? o->d1_all : o->bad2_all, ob = kitti ? o->d1_est : o->bad2_est;
        const double sa = kitti ? s3->d1_all : s3->bad2_all, sb = kitti ? s3->d1_est : s3->bad2_est;
        const double hb = kitti ? hh->d1_est : hh->bad2_est;
        const bool ya = oa <= 0.8 * sa, yb = ob <= sb;
        met_a += ya;
        met_b += yb;
        met_both += ya && yb;
        ++pairs;
        md << "| " << rows[i].scene << " | " << (kitti ? "D1 " : "") << region << " | " << pct(oa) << " | " << pct(sa)
           << " | " << pct(oa / sa) << (ya ? " yes" : " no") << " | " << pct(ob) << " | " << pct(sb) << " | "
           << (yb ? "yes" : "no") << " | " << (ob <= hb ? "yes" : "no") << " (" << pct(hb) << ") | "
           << (ya && yb ? "**yes**" : "no") << " |\n";
      }
    }
    md << "\n(a) met on " << met_a << " of " << pairs << " scene/mask pairs, (b) on " << met_b << " of " << pairs
       << ", both on " << met_both << " of " << pairs << ".\n\n";
  }
  if (!markdown_path.empty()) {
    std::ofstream(markdown_path) << md.str();
  } else {
    std::cout << md.str();
  }
  return 0;
}
