// estimate_feature_motion (feature_motion.hpp) on OpenCV's ORB, brute-force Hamming matcher and PnP RANSAC.
#include "s3d/fusion/feature_motion.hpp"

#include <cmath>
#include <vector>

#include <opencv2/calib3d.hpp>
#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

#include "s3d/core/errors.hpp"

namespace s3d::fusion {
namespace {

struct Features {
  std::vector<cv::KeyPoint> points;
  cv::Mat descriptors;
};

Features orb_features(const Image<std::uint8_t>& rgb, int count) {
  // OpenCV's Mat header only reads the bytes here.
  const cv::Mat colour(rgb.height, rgb.width, CV_8UC3, const_cast<std::uint8_t*>(rgb.data.data()));
  cv::Mat grey;
  cv::cvtColor(colour, grey, cv::COLOR_RGB2GRAY);
  Features f;
  cv::ORB::create(count)->detectAndCompute(grey, cv::noArray(), f.points, f.descriptors);
  return f;
}

bool usable_depth(float z, const FeatureMotionParams& p) {
  return std::isfinite(z) && z > 0.0f && z > p.min_depth && (p.max_depth <= 0.0f || z <= p.max_depth);
}

}  // namespace

void FeatureMotionParams::validate() const {
  S3D_EXPECTS(features >= 8 && features <= 100000, "FeatureMotionParams: features must be in [8, 100000]");
  S3D_EXPECTS(ratio > 0.0f && ratio <= 1.0f, "FeatureMotionParams: ratio must be in (0, 1]");
  S3D_EXPECTS(reprojection_px > 0.0f && std::isfinite(reprojection_px),
              "FeatureMotionParams: reprojection_px must be positive");
  S3D_EXPECTS(min_inliers >= 6, "FeatureMotionParams: min_inliers must be at least 6");
  S3D_EXPECTS(min_depth >= 0.0f && max_depth >= 0.0f && std::isfinite(min_depth) && std::isfinite(max_depth),
              "FeatureMotionParams: min_depth and max_depth must be finite and >= 0");
}

FeatureMotion estimate_feature_motion(const Image<std::uint8_t>& from_rgb, const Image<float>& from_depth,
                                      const Image<std::uint8_t>& to_rgb, const CameraIntrinsics& camera,
                                      const FeatureMotionParams& params) {
  params.validate();
  const int w = from_depth.width, h = from_depth.height;
  S3D_EXPECTS(from_depth.channels == 1 && w >= 1 && h >= 1, "estimate_feature_motion: depth must be one channel");
  for (const auto* rgb : {&from_rgb, &to_rgb})
    S3D_EXPECTS(rgb->channels == 3 && rgb->width == w && rgb->height == h,
                "estimate_feature_motion: colour images must be RGB of the depth's size");
  FeatureMotion out;
  const Features from = orb_features(from_rgb, params.features);
  const Features to = orb_features(to_rgb, params.features);
  if (from.points.size() < 2 || to.points.size() < 2) {
    out.reason =
        "too few ORB corners (" + std::to_string(from.points.size()) + ", " + std::to_string(to.points.size()) + ")";
    return out;
  }
  std::vector<std::vector<cv::DMatch>> knn;
  cv::BFMatcher(cv::NORM_HAMMING).knnMatch(from.descriptors, to.descriptors, knn, 2);
  std::vector<cv::Point3f> object;
  std::vector<cv::Point2f> image;
  for (const auto& m : knn) {
    if (m.size() < 2 || !(m[0].distance < params.ratio * m[1].distance)) continue;
    const cv::Point2f p = from.points[m[0].queryIdx].pt;
    const int x = static_cast<int>(std::lround(p.x)), y = static_cast<int>(std::lround(p.y));
    if (x < 0 || y < 0 || x >= w || y >= h) continue;
    const float z = from_depth.at(x, y);
    if (!usable_depth(z, params)) continue;
    object.emplace_back((p.x - camera.cx) / camera.fx * z, (p.y - camera.cy) / camera.fy * z, z);
    image.push_back(to.points[m[0].trainIdx].pt);
  }
  out.matches = static_cast<int>(object.size());
  if (out.matches < params.min_inliers) {
    out.reason = "too few matches with depth (" + std::to_string(out.matches) + ")";
    return out;
  }
  const cv::Matx33d k(camera.fx, 0.0, camera.cx, 0.0, camera.fy, camera.cy, 0.0, 0.0, 1.0);
  cv::Mat rvec, tvec;
  std::vector<int> inliers;
  const bool solved = cv::solvePnPRansac(object, image, k, cv::noArray(), rvec, tvec, false, 200,
                                         params.reprojection_px, 0.999, inliers);
  out.inliers = static_cast<int>(inliers.size());
  if (!solved || out.inliers < params.min_inliers) {
    out.reason = "too few RANSAC inliers (" + std::to_string(out.inliers) + " of " + std::to_string(out.matches) + ")";
    return out;
  }
  cv::Matx33d r;
  cv::Rodrigues(rvec, r);
  Eigen::Isometry3d to_from = Eigen::Isometry3d::Identity();  // x_to = R x_from + t
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) to_from.linear()(i, j) = r(i, j);
    to_from.translation()(i) = tvec.at<double>(i);
  }
  if (!to_from.matrix().allFinite()) {
    out.reason = "PnP gave a non-finite pose";
    return out;
  }
  out.motion = to_from.inverse();
  out.ok = true;
  return out;
}

}  // namespace s3d::fusion
