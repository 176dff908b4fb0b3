#pragma once
// Dataset folders as sgm-depth inputs: a positional argument that is a folder becomes one item per pair.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace s3d::sgm_depth {

/// The pairs of a dataset folder, as manifest records {"left","right"[,"gt"][,"gt_scale"][,"calib"],"name"}:
/// - KITTI: `image_2/` + `image_3/` (same file names); gt from `disp_occ_0/` (else `disp_noc_0/`),
///   calib from `calib_cam_to_cam/<frame>.txt` when present. name = the file stem (`000005_10`).
/// - Middlebury scene: `im0.png`+`im1.png` (2014/2021; gt `disp0GT.pfm`/`disp0.pfm`, `calib.txt`),
///   `imL.png`+`imR.png` (2001/2003; gt `groundtruth.png` or `disp2.png`, scale from `info.txt`), or
///   `view1.png`+`view5.png` (2005/2006; gt `disp1.png`, used only with a scale: `gt_scale` given).
///   name = the folder name.
/// - Otherwise the folder's immediate subfolders that are Middlebury scenes, in name order.
/// `gt_scale` (> 0) is copied into records with an 8-bit gt. @throws DataError when nothing is found.
std::vector<nlohmann::json> dataset_items(const std::string& folder, double gt_scale);

}  // namespace s3d::sgm_depth
