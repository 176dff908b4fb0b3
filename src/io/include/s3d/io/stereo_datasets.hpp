#pragma once
// The naming conventions of the public stereo datasets, in one place: which files of a KITTI or Middlebury
// folder are the left and right views, the ground truth, its scale, the evaluation masks and the
// calibration. Tools (sgm-depth's dataset folders), the disparity reader and the evaluation use these.
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace s3d::io {

/// The pairs of a dataset folder, as manifest records {"left","right"[,"gt"][,"gt_scale"][,"calib"],"name"}:
/// - KITTI: `image_2/` + `image_3/` (same file names); gt from `disp_occ_0/` (else `disp_noc_0/`,
///   `disp_occ/`, `disp_noc/`), calib from `calib_cam_to_cam/<sequence>.txt` when present (frames are
///   `<sequence>_<frame>.png`). name = the file stem (`000005_10`). An image of either side without its
///   partner gives a record with `unpaired`: a one-line message naming it (the reader fails that item).
/// - Middlebury scene: `im0.png`+`im1.png` (2014/2021; gt `disp0GT.pfm`/`disp0.pfm`, `calib.txt`),
///   `imL.png`+`imR.png` (2001/2003; gt `groundtruth.png` or `disp2.png`, scale from `info.txt`), or
///   `view1.png`+`view5.png` (2005/2006; gt `disp1.png`, used only with a scale: `gt_scale` given).
///   name = the folder name.
/// - Otherwise the folder's immediate subfolders that are Middlebury scenes, in name order.
/// `gt_scale` (> 0) is copied into records with an integer (non-PFM) gt.
/// @throws DataError naming `folder` when nothing is found.
std::vector<nlohmann::json> stereo_dataset_items(const std::string& folder, double gt_scale);

/// The scale of an 8-bit Middlebury ground truth (d = value / scale), from the `info.txt` beside it
/// (Middlebury 2001/2003); 0 when there is none or it holds no positive number.
double middlebury_gt_scale(const std::string& gt_path);

/// The Middlebury evaluation masks beside a ground truth that exist, as {region, path}: `nonocc.png`,
/// `all.png`, `disc.png` (255 = evaluated / near a discontinuity), in that order.
std::vector<std::pair<std::string, std::string>> middlebury_mask_files(const std::string& gt_path);

}  // namespace s3d::io
