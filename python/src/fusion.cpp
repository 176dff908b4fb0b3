// s3d.FusionEngine: s3d::fusion's tracking and TSDF fusion, one depth frame at a time.
#include <nanobind/eigen/dense.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

#include <optional>
#include <variant>

#include "arrays.hpp"
#include "engines.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/fusion/fusion_engine.hpp"
#include "staging.hpp"

namespace s3d::python {
namespace {

using namespace nb::literals;
using Matrix4 = Eigen::Matrix<double, 4, 4, Eigen::RowMajor>;

template <typename T>
std::array<T, 3> triple(const std::variant<T, std::array<T, 3>>& v) {
  if (const auto* one = std::get_if<T>(&v)) return {*one, *one, *one};
  return std::get<std::array<T, 3>>(v);
}

nb::dict frame_dict(const fusion::FrameResult& r) {
  nb::dict d;
  d["status"] = fusion::to_string(r.status);
  d["pose"] = Matrix4(r.pose.matrix());
  d["valid_pixels"] = r.valid_pixels;
  d["inliers"] = r.inliers;
  d["inlier_ratio"] = r.inlier_ratio;
  d["residual"] = r.residual;
  d["condition"] = r.condition;
  d["iterations"] = r.iterations;
  d["reason"] = r.reason;
  d["blocks"] = r.volume_blocks;
  d["blocks_refused"] = r.volume_blocks_refused;
  return d;
}

/// One frame's depth (float32 [H, W] metres) and optional colour (uint8 [H, W, 3]) in host memory, read on the
/// arrays' stream (the engine's frame entries take host memory).
class FrameInput {
 public:
  FrameInput(nb::handle depth_obj, nb::handle rgb_obj, std::int64_t width, std::int64_t height)
      : width_(static_cast<int>(width)),
        height_(static_cast<int>(height)),
        depth_(input(depth_obj, "depth", {DType::kFloat32}, {height, width})),
        depth_host_(depth_, resolve_stream(nb::none(), depth_)) {
    if (!rgb_obj.is_none()) {
      rgb_.emplace(input(rgb_obj, "rgb", {DType::kUint8}, {height, width, 3}));
      rgb_host_.emplace(*rgb_, resolve_stream(nb::none(), *rgb_));
    }
  }
  ImageView<const float> depth_view() const { return make_image_view(depth_host_.data(), width_, height_); }
  const std::uint8_t* rgb() const { return rgb_host_ ? rgb_host_->data() : nullptr; }

 private:
  int width_, height_;
  Input depth_;
  HostCopy<float> depth_host_;
  std::optional<Input> rgb_;
  std::optional<HostCopy<std::uint8_t>> rgb_host_;
};

class PyFusionEngine {
 public:
  PyFusionEngine(int width, int height, const std::array<float, 4>& intrinsics, const std::string& device,
                 const std::string& mode, const std::string& volume,
                 const std::variant<int, std::array<int, 3>>& resolution,
                 const std::variant<float, std::array<float, 3>>& size, std::optional<std::array<float, 3>> origin,
                 float truncation, float min_depth, float max_depth, bool color, std::optional<Matrix4> initial_pose)
      : width_(width),
        height_(height),
        engine_(parse_device(device),
                params(intrinsics, mode, volume, resolution, size, origin, truncation, min_depth, max_depth, color,
                       initial_pose),
                width, height) {}

  nb::dict process(nb::handle depth_obj, nb::handle rgb_obj) {
    const FrameInput frame(depth_obj, rgb_obj, width_, height_);
    fusion::FrameResult r;
    {
      nb::gil_scoped_release release;
      r = engine_.process(frame.depth_view(), frame.rgb());
    }
    return frame_dict(r);
  }

  nb::dict integrate(nb::handle depth_obj, const Matrix4& pose, nb::handle rgb_obj) {
    const FrameInput frame(depth_obj, rgb_obj, width_, height_);
    const Eigen::Matrix3d rotation = pose.topLeftCorner<3, 3>();
    const bool rigid = pose.allFinite() && pose(3, 0) == 0.0 && pose(3, 1) == 0.0 && pose(3, 2) == 0.0 &&
                       pose(3, 3) == 1.0 && (rotation * rotation.transpose()).isIdentity(1e-6) &&
                       rotation.determinant() > 0.0;
    if (!rigid)
      throw InvalidArgument("pose: expected a rigid 4x4 camera-to-world transform (rotation and translation)");
    Eigen::Isometry3d camera_to_world(pose);
    fusion::FrameResult r;
    {
      nb::gil_scoped_release release;
      r = engine_.integrate_with_pose(frame.depth_view(), camera_to_world, frame.rgb());
    }
    return frame_dict(r);
  }

  nb::dict mesh() const {
    fusion::Mesh mesh;
    {
      nb::gil_scoped_release release;
      mesh = engine_.extract_mesh();
    }
    const std::int64_t v = static_cast<std::int64_t>(mesh.vertices.size() / 3);
    const std::int64_t t = static_cast<std::int64_t>(mesh.triangles.size() / 3);
    const std::int64_t c = static_cast<std::int64_t>(mesh.colors.size() / 3);
    nb::dict d;
    d["vertices"] = export_array(adopt(std::move(mesh.vertices), {v, 3}), Framework::kNumpy);
    d["normals"] = export_array(adopt(std::move(mesh.normals), {v, 3}), Framework::kNumpy);
    d["triangles"] = export_array(adopt(std::move(mesh.triangles), {t, 3}), Framework::kNumpy);
    d["colors"] = export_array(adopt(std::move(mesh.colors), {c, 3}), Framework::kNumpy);
    return d;
  }

  nb::dict cloud() const {
    fusion::SurfaceCloud cloud;
    {
      nb::gil_scoped_release release;
      cloud = engine_.extract_cloud();
    }
    const std::int64_t n = static_cast<std::int64_t>(cloud.points.size() / 3);
    const std::int64_t c = static_cast<std::int64_t>(cloud.colors.size() / 3);
    nb::dict d;
    d["points"] = export_array(adopt(std::move(cloud.points), {n, 3}), Framework::kNumpy);
    d["normals"] = export_array(adopt(std::move(cloud.normals), {n, 3}), Framework::kNumpy);
    d["colors"] = export_array(adopt(std::move(cloud.colors), {c, 3}), Framework::kNumpy);
    return d;
  }

  Matrix4 pose() const { return engine_.pose().matrix(); }
  void reset() { engine_.reset(); }
  std::string device() const { return engine_.device().to_string(); }

 private:
  static fusion::FusionParams params(const std::array<float, 4>& intrinsics, const std::string& mode,
                                     const std::string& volume, const std::variant<int, std::array<int, 3>>& resolution,
                                     const std::variant<float, std::array<float, 3>>& size,
                                     std::optional<std::array<float, 3>> origin, float truncation, float min_depth,
                                     float max_depth, bool color, std::optional<Matrix4> initial_pose) {
    fusion::FusionParams p;
    p.camera = {intrinsics[0], intrinsics[1], intrinsics[2], intrinsics[3]};
    if (mode == "f2m") {
      p.mode = fusion::TrackingMode::kFrameToModel;
    } else if (mode == "f2f") {
      p.mode = fusion::TrackingMode::kFrameToFrame;
    } else {
      throw InvalidArgument("mode: expected \"f2m\" (frame to model) or \"f2f\" (frame to frame)");
    }
    if (volume == "dense") {
      p.volume.kind = fusion::VolumeKind::kDense;
    } else if (volume == "sparse") {
      p.volume.kind = fusion::VolumeKind::kSparse;
    } else {
      throw InvalidArgument("volume: expected \"dense\" or \"sparse\"");
    }
    p.volume.resolution = triple(resolution);
    p.volume.size = triple(size);
    // A sparse volume's voxel is size / resolution, as icp-fuse's default --voxel-size.
    p.volume.sparse_voxel_size = p.volume.size[0] / static_cast<float>(p.volume.resolution[0]);
    if (origin) p.volume.origin = *origin;
    p.volume.truncation = truncation;
    p.volume.color = color;
    p.depth.min_depth = min_depth;
    p.depth.max_depth = max_depth;
    p.initial_pose = initial_pose ? Eigen::Isometry3d(Eigen::Matrix4d(*initial_pose))
                                  : fusion::FusionParams::kinfu_initial_pose(p.volume);
    p.validate();
    return p;
  }

  std::int64_t width_, height_;
  fusion::FusionEngine engine_;
};

}  // namespace

void bind_fusion(nb::module_& m) {
  nb::class_<PyFusionEngine>(m, "FusionEngine",
                             "KinectFusion-style tracking and TSDF fusion of a depth sequence (docs/ICP-FUSE.md), "
                             "one engine per sequence and device.")
      .def(nb::init<int, int, const std::array<float, 4>&, const std::string&, const std::string&, const std::string&,
                    const std::variant<int, std::array<int, 3>>&, const std::variant<float, std::array<float, 3>>&,
                    std::optional<std::array<float, 3>>, float, float, float, bool, std::optional<Matrix4>>(),
           "width"_a, "height"_a, "intrinsics"_a, "device"_a = "cpu", nb::kw_only(), "mode"_a = "f2m",
           "volume"_a = "dense", "resolution"_a = 512, "size"_a = 3.0f, "origin"_a = nb::none(), "truncation"_a = 0.03f,
           "min_depth"_a = 0.0f, "max_depth"_a = 0.0f, "color"_a = false, "initial_pose"_a = nb::none(),
           "intrinsics: (fx, fy, cx, cy) in pixels; resolution, size (metres), origin: the TSDF volume; "
           "initial_pose: 4x4 camera to world (default: KinFu's, behind the volume's centre).")
      .def("process", &PyFusionEngine::process, "depth"_a, "rgb"_a = nb::none(),
           "Tracks one frame (depth float32 [H, W] in metres; 0, NaN, inf invalid; rgb uint8 [H, W, 3] optional) and "
           "integrates it when tracked. Returns a dict: status (first, tracked, recovered, lost, invalid), pose "
           "(4x4 camera to world), valid_pixels, inliers, inlier_ratio, residual, iterations, reason, and for the "
           "sparse "
           "volume blocks (allocated) and blocks_refused (by the full memory pool this frame; 0 for the dense cube).")
      .def("integrate", &PyFusionEngine::integrate, "depth"_a, "pose"_a, "rgb"_a = nb::none(),
           "Integrates one frame at a given 4x4 camera-to-world pose (no tracking).")
      .def("mesh", &PyFusionEngine::mesh,
           "Marching cubes over the volume: dict of vertices [V, 3], normals [V, 3], triangles int32 [T, 3], colors "
           "uint8 [V, 3] (empty without colour), NumPy arrays.")
      .def("cloud", &PyFusionEngine::cloud, "The zero crossings as points, normals and colors (NumPy arrays).")
      .def("reset", &PyFusionEngine::reset, "Drops the model and the trajectory.")
      .def_prop_ro("pose", &PyFusionEngine::pose, "The current 4x4 camera-to-world pose.")
      .def_prop_ro("device", &PyFusionEngine::device);
}

}  // namespace s3d::python
