// TrackingBackend, CPU (the oracle): host buffers allocated once per engine, stages in tracking_cpu.hpp.
#include <algorithm>
#include <vector>

#include "backend.hpp"
#include "s3d/core/errors.hpp"
#include "tracking_common.hpp"
#include "tracking_cpu.hpp"

namespace s3d::fusion::detail {
namespace {

struct HostLevel {
  int width = 0, height = 0;
  std::vector<float> depth;  // filtered (level 0) or pyrDown
  std::vector<Vec3f> vertices, normals, ref_vertices, ref_normals;
  std::vector<Vec3f> prev_vertices, prev_normals;     // f2m's previous frame, world frame
  std::vector<float> grey, ref_grey, ref_gx, ref_gy;  // the photometric term's, when it is on
};

class CpuTracking final : public TrackingBackend {
 public:
  CpuTracking(const FusionParams& params, int width, int height)
      : params_(params),
        width_(width),
        height_(height),
        raw_(static_cast<std::size_t>(width) * height),
        space_(bilateral_space_table(params.depth.bilateral_radius, params.depth.sigma_space)) {
    levels_.resize(params.depth.levels);
    for (int l = 0; l < params.depth.levels; ++l) {
      HostLevel& lv = levels_[l];
      lv.width = level_size(width, l);
      lv.height = level_size(height, l);
      const std::size_t n = static_cast<std::size_t>(lv.width) * lv.height;
      lv.depth.assign(n, 0.0f);
      lv.vertices.assign(n, invalid_vec3());
      lv.normals.assign(n, invalid_vec3());
      lv.ref_vertices.assign(n, invalid_vec3());
      lv.ref_normals.assign(n, invalid_vec3());
      if (params.mode == TrackingMode::kFrameToModel && params.icp.frame_fallback) {
        lv.prev_vertices.assign(n, invalid_vec3());
        lv.prev_normals.assign(n, invalid_vec3());
      }
      if (params.icp.photometric_sigma > 0.0f)
        for (auto* grey : {&lv.grey, &lv.ref_grey, &lv.ref_gx, &lv.ref_gy}) grey->assign(n, 0.0f);
    }
  }

  void preprocess_grey(const float* grey) override {
    S3D_EXPECTS(!levels_[0].grey.empty(), "CpuTracking: no grey levels (photometric_sigma is 0)");
    std::copy(grey, grey + levels_[0].grey.size(), levels_[0].grey.begin());
    for (std::size_t l = 1; l < levels_.size(); ++l)
      halve_grey_cpu(levels_[l - 1].grey.data(), levels_[l - 1].width, levels_[l - 1].height, levels_[l].grey.data());
  }

  void keep_reference_grey() override {
    for (HostLevel& lv : levels_) {
      lv.ref_grey = lv.grey;
      grey_gradient_cpu(lv.ref_grey.data(), lv.width, lv.height, lv.ref_gx.data(), lv.ref_gy.data());
    }
  }

  GreyMaps grey_maps(int level) override {
    HostLevel& lv = levels_.at(level);
    if (lv.grey.empty()) return {};
    return {lv.grey.data(), lv.ref_grey.data(), lv.ref_gx.data(), lv.ref_gy.data()};
  }

  std::int64_t preprocess(ImageView<const float> depth) override {
    const DepthParams& p = params_.depth;
    const std::int64_t valid =
        mask_depth_cpu(depth.data, depth.pitch, width_, height_, p.min_depth, p.max_depth, raw_.data());
    if (p.bilateral)
      bilateral_cpu(raw_.data(), width_, height_, p.bilateral_radius, space_.data(), inv_two_sigma2(p.sigma_depth),
                    levels_[0].depth.data());
    else
      levels_[0].depth = raw_;
    for (std::size_t l = 1; l < levels_.size(); ++l)
      pyrdown_cpu(levels_[l - 1].depth.data(), levels_[l - 1].width, levels_[l - 1].height, p.pyramid_gate,
                  levels_[l].depth.data());
    for (std::size_t l = 0; l < levels_.size(); ++l) {
      HostLevel& lv = levels_[l];
      vertex_normal_maps_cpu(lv.depth.data(), lv.width, lv.height, to_pinhole(params_.camera.level(int(l))),
                             lv.vertices.data(), lv.normals.data());
    }
    return valid;
  }

  ImageView<const float> raw_depth() const override { return {raw_.data(), width_, height_, width_}; }

  Maps frame_maps(int level) override {
    HostLevel& lv = levels_.at(level);
    return {lv.vertices.data(), lv.normals.data(), lv.width, lv.height};
  }
  Maps reference_maps(int level) override {
    HostLevel& lv = levels_.at(level);
    return {lv.ref_vertices.data(), lv.ref_normals.data(), lv.width, lv.height};
  }

  Maps previous_maps(int level) {
    HostLevel& lv = levels_.at(level);
    S3D_EXPECTS(!lv.prev_vertices.empty(), "CpuTracking: no previous frame is kept (f2m with frame_fallback only)");
    return {lv.prev_vertices.data(), lv.prev_normals.data(), lv.width, lv.height};
  }

  void reference_pyramid_from_level0() override {
    for (std::size_t l = 1; l < levels_.size(); ++l) {
      const HostLevel& s = levels_[l - 1];
      HostLevel& d = levels_[l];
      halve_maps_cpu(s.ref_vertices.data(), s.ref_normals.data(), s.width, s.height, d.ref_vertices.data(),
                     d.ref_normals.data());
    }
  }

  void reference_from_frame(const Rigid& camera_to_world) override {
    for (HostLevel& lv : levels_)
      transform_maps_cpu(lv.vertices.data(), lv.normals.data(), lv.width * lv.height, camera_to_world,
                         lv.ref_vertices.data(), lv.ref_normals.data());
  }

  void keep_previous_frame(const Rigid& camera_to_world) override {
    for (HostLevel& lv : levels_)
      if (!lv.prev_vertices.empty())
        transform_maps_cpu(lv.vertices.data(), lv.normals.data(), lv.width * lv.height, camera_to_world,
                           lv.prev_vertices.data(), lv.prev_normals.data());
  }

  IcpSystem build_system(int level, const Rigid& estimate, const Rigid& world_to_reference,
                         const CameraIntrinsics& camera, const IcpGates& gates) override {
    double sums[kIcpTerms];
    icp_reduce_cpu(make_icp_inputs(frame_maps(level), reference_maps(level), estimate, world_to_reference, camera,
                                   gates, level, grey_maps(level)),
                   sums);
    return to_icp_system(sums);
  }

  IcpState run_icp(const IcpRequest& request) override {
    IcpState state = icp_initial_state(request.start);
    for (int level = params_.depth.levels - 1; level >= 0; --level) {
      const CameraIntrinsics camera = params_.camera.level(level);
      for (int it = 0; it < params_.icp.iterations[level] && icp_runs_level(state, level); ++it) {
        double sums[kIcpTerms];
        const Maps ref = request.previous_frame ? previous_maps(level) : reference_maps(level);
        icp_reduce_cpu(make_icp_inputs(frame_maps(level), ref, to_rigid(state.pose), request.world_to_reference, camera,
                                       request.gates, level, grey_maps(level)),
                       sums);
        icp_step(state, sums, level, params_.icp.max_condition);
      }
    }
    return state;
  }

  std::vector<float> download_reference_grey(int level) override { return levels_.at(level).ref_grey; }
  HostMaps download_frame_maps(int level) override {
    const HostLevel& lv = levels_.at(level);
    return {lv.width, lv.height, lv.vertices, lv.normals};
  }
  HostMaps download_reference_maps(int level) override {
    const HostLevel& lv = levels_.at(level);
    return {lv.width, lv.height, lv.ref_vertices, lv.ref_normals};
  }
  std::vector<float> download_filtered_depth(int level) override { return levels_.at(level).depth; }

 private:
  FusionParams params_;
  int width_, height_;
  std::vector<float> raw_;
  std::vector<float> space_;
  std::vector<HostLevel> levels_;
};

}  // namespace

std::unique_ptr<TrackingBackend> make_cpu_tracking(const FusionParams& params, int width, int height) {
  return std::make_unique<CpuTracking>(params, width, height);
}

}  // namespace s3d::fusion::detail
