// TrackingBackend, CUDA: device buffers allocated once per engine on the engine's own stream, stages in
// depth_preprocess_cuda.cu and icp_reduce_cuda.cu. Each public call returns with its work finished
// (preprocess, build_system and run_icp download a result; the others synchronise), so host timings are real and
// the volume backend, whatever stream it uses, sees finished maps.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "backend.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/stream.hpp"
#include "tracking_common.hpp"
#include "tracking_cuda.cuh"

namespace s3d::fusion::detail {
namespace {

struct DeviceLevel {
  int width = 0, height = 0;
  DeviceBuffer<float> depth;
  DeviceBuffer<Vec3f> vertices, normals, ref_vertices, ref_normals;
  DeviceBuffer<Vec3f> prev_vertices, prev_normals;     // f2m's previous frame, world frame
  DeviceBuffer<float> grey, ref_grey, ref_gx, ref_gy;  // the photometric term's, when it is on
};

template <typename T>
std::vector<T> download(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  std::vector<T> host(buffer.size());
  buffer.copy_to_host_async(host.data(), host.size(), stream);
  synchronize(stream);
  return host;
}

class CudaTracking final : public TrackingBackend {
 public:
  CudaTracking(const Device& device, const FusionParams& params, int width, int height)
      : params_(params), width_(width), height_(height) {
#ifndef S3D_PORTABLE_KERNELS  // the portable build tests the per-iteration launches of GPUs without cooperative launch
    attempt_blocks_ = icp_attempt_blocks(device.index());
#endif
    const std::size_t n = static_cast<std::size_t>(width) * height;
    input_.resize(n, stream_);
    raw_.resize(n, stream_);
    levels_.resize(params.depth.levels);
    int max_tiles = 0;
    for (int l = 0; l < params.depth.levels; ++l) {
      DeviceLevel& lv = levels_[l];
      lv.width = level_size(width, l);
      lv.height = level_size(height, l);
      const std::size_t m = static_cast<std::size_t>(lv.width) * lv.height;
      lv.depth.resize(m, stream_);
      lv.vertices.resize(m, stream_);
      lv.normals.resize(m, stream_);
      lv.ref_vertices.resize(m, stream_);
      lv.ref_normals.resize(m, stream_);
      // The reference starts empty (all invalid: NaN bytes).
      if (m) {
        S3D_CUDA_CHECK(cudaMemsetAsync(lv.ref_vertices.data(), 0xff, m * sizeof(Vec3f), stream_));
        S3D_CUDA_CHECK(cudaMemsetAsync(lv.ref_normals.data(), 0xff, m * sizeof(Vec3f), stream_));
      }
      if (params.mode == TrackingMode::kFrameToModel && params.icp.frame_fallback) {
        lv.prev_vertices.resize(m, stream_);
        lv.prev_normals.resize(m, stream_);
        if (m) {
          S3D_CUDA_CHECK(cudaMemsetAsync(lv.prev_vertices.data(), 0xff, m * sizeof(Vec3f), stream_));
          S3D_CUDA_CHECK(cudaMemsetAsync(lv.prev_normals.data(), 0xff, m * sizeof(Vec3f), stream_));
        }
      }
      if (params.icp.photometric_sigma > 0.0f)
        for (auto* grey : {&lv.grey, &lv.ref_grey, &lv.ref_gx, &lv.ref_gy}) {
          grey->resize(m, stream_);
          grey->fill_zero_async(stream_);
        }
      max_tiles = std::max(max_tiles, icp_tiles(static_cast<int>(m)));
    }
    // Two buffers of tile sums: the whole-attempt kernel alternates between them.
    tile_sums_.resize(2 * static_cast<std::size_t>(kIcpTerms) * std::max(max_tiles, 1), stream_);
    counter_.resize(1, stream_);
    counter_.fill_zero_async(stream_);
    valid_.resize(1, stream_);
    host_sums_.resize(kIcpTerms);
    state_.resize(1, stream_);
    host_state_.resize(1);
    host_valid_.resize(1);
    const std::vector<float> space = bilateral_space_table(params.depth.bilateral_radius, params.depth.sigma_space);
    upload_bilateral_space_cuda(space.data(), static_cast<int>(space.size()), stream_);
    synchronize(stream_);
  }

  std::int64_t preprocess(ImageView<const float> depth) override {
    const DepthParams& p = params_.depth;
    S3D_CUDA_CHECK(cudaMemcpy2DAsync(input_.data(), sizeof(float) * width_, depth.data, sizeof(float) * depth.pitch,
                                     sizeof(float) * width_, height_, cudaMemcpyHostToDevice, stream_));
    valid_.fill_zero_async(stream_);
    mask_depth_cuda(input_.data(), width_, height_, p.min_depth, p.max_depth, raw_.data(), valid_.data(), stream_);
    DeviceLevel& l0 = levels_[0];
    if (p.bilateral)
      bilateral_cuda(raw_.data(), width_, height_, p.bilateral_radius, inv_two_sigma2(p.sigma_depth), l0.depth.data(),
                     stream_);
    else if (!raw_.empty())
      S3D_CUDA_CHECK(cudaMemcpyAsync(l0.depth.data(), raw_.data(), raw_.bytes(), cudaMemcpyDeviceToDevice, stream_));
    for (std::size_t l = 1; l < levels_.size(); ++l)
      pyrdown_cuda(levels_[l - 1].depth.data(), levels_[l - 1].width, levels_[l - 1].height, p.pyramid_gate,
                   levels_[l].depth.data(), stream_);
    for (std::size_t l = 0; l < levels_.size(); ++l) {
      DeviceLevel& lv = levels_[l];
      vertex_normal_maps_cuda(lv.depth.data(), lv.width, lv.height, to_pinhole(params_.camera.level(int(l))),
                              lv.vertices.data(), lv.normals.data(), stream_);
    }
    valid_.copy_to_host_async(host_valid_.data(), 1, stream_);
    synchronize(stream_);
    return static_cast<std::int64_t>(host_valid_[0]);
  }

  void preprocess_grey(const float* grey) override {
    DeviceLevel& l0 = levels_[0];
    S3D_EXPECTS(!l0.grey.empty(), "CudaTracking: no grey levels (photometric_sigma is 0)");
    l0.grey.copy_from_host_async(grey, l0.grey.size(), stream_);
    for (std::size_t l = 1; l < levels_.size(); ++l)
      halve_grey_cuda(levels_[l - 1].grey.data(), levels_[l - 1].width, levels_[l - 1].height, levels_[l].grey.data(),
                      stream_);
    synchronize(stream_);  // `grey` is the caller's pageable memory
  }

  void keep_reference_grey() override {
    for (DeviceLevel& lv : levels_) {
      if (lv.grey.empty()) continue;
      S3D_CUDA_CHECK(
          cudaMemcpyAsync(lv.ref_grey.data(), lv.grey.data(), lv.grey.bytes(), cudaMemcpyDeviceToDevice, stream_));
      grey_gradient_cuda(lv.ref_grey.data(), lv.width, lv.height, lv.ref_gx.data(), lv.ref_gy.data(), stream_);
    }
    synchronize(stream_);
  }

  GreyMaps grey_maps(int level) override {
    DeviceLevel& lv = levels_.at(level);
    if (lv.grey.empty()) return {};
    return {lv.grey.data(), lv.ref_grey.data(), lv.ref_gx.data(), lv.ref_gy.data()};
  }

  ImageView<const float> raw_depth() const override { return {raw_.data(), width_, height_, width_}; }

  Maps frame_maps(int level) override {
    DeviceLevel& lv = levels_.at(level);
    return {lv.vertices.data(), lv.normals.data(), lv.width, lv.height};
  }
  Maps reference_maps(int level) override {
    DeviceLevel& lv = levels_.at(level);
    return {lv.ref_vertices.data(), lv.ref_normals.data(), lv.width, lv.height};
  }

  void reference_pyramid_from_level0() override {
    // Level 0 was just written by the volume's ray cast, possibly on another stream.
    S3D_CUDA_CHECK(cudaDeviceSynchronize());
    for (std::size_t l = 1; l < levels_.size(); ++l) {
      DeviceLevel& s = levels_[l - 1];
      DeviceLevel& d = levels_[l];
      halve_maps_cuda(s.ref_vertices.data(), s.ref_normals.data(), s.width, s.height, d.ref_vertices.data(),
                      d.ref_normals.data(), stream_);
    }
    synchronize(stream_);
  }

  void reference_from_frame(const Rigid& camera_to_world) override {
    for (DeviceLevel& lv : levels_)
      transform_maps_cuda(lv.vertices.data(), lv.normals.data(), lv.width * lv.height, camera_to_world,
                          lv.ref_vertices.data(), lv.ref_normals.data(), stream_);
    synchronize(stream_);
  }

  void keep_previous_frame(const Rigid& camera_to_world) override {
    for (DeviceLevel& lv : levels_)
      if (!lv.prev_vertices.empty())
        transform_maps_cuda(lv.vertices.data(), lv.normals.data(), lv.width * lv.height, camera_to_world,
                            lv.prev_vertices.data(), lv.prev_normals.data(), stream_);
    synchronize(stream_);
  }

  Maps previous_maps(int level) {
    DeviceLevel& lv = levels_.at(level);
    S3D_EXPECTS(!lv.prev_vertices.empty(), "CudaTracking: no previous frame is kept (f2m with frame_fallback only)");
    return {lv.prev_vertices.data(), lv.prev_normals.data(), lv.width, lv.height};
  }

  IcpSystem build_system(int level, const Rigid& estimate, const Rigid& world_to_reference,
                         const CameraIntrinsics& camera, const IcpGates& gates) override {
    const IcpInputs in = make_icp_inputs(frame_maps(level), reference_maps(level), estimate, world_to_reference, camera,
                                         gates, level, grey_maps(level));
    // The last block writes the 29 doubles straight into pinned host memory (mapped: unified addressing),
    // so an iteration is one launch and one synchronisation, no copy.
    icp_reduce_cuda(in, tile_sums_.data(), counter_.data(), host_sums_.data(), stream_);
    synchronize(stream_);
    return to_icp_system(host_sums_.data());
  }

  IcpState run_icp(const IcpRequest& request) override {
    host_state_[0] = icp_initial_state(request.start);
    state_.copy_from_host_async(host_state_.data(), 1, stream_);
    IcpAttempt attempt{};
    attempt.levels = params_.depth.levels;
    attempt.max_condition = params_.icp.max_condition;
    for (int level = 0; level < attempt.levels; ++level) {
      IcpAttemptLevel& lv = attempt.level[level];
      // The estimate is the device state's; the one given here is a placeholder.
      const Maps ref = request.previous_frame ? previous_maps(level) : reference_maps(level);
      lv.in = make_icp_inputs(frame_maps(level), ref, Rigid{}, request.world_to_reference, params_.camera.level(level),
                              request.gates, level, grey_maps(level));
      lv.iterations = params_.icp.iterations[level];
      lv.tiles = icp_tiles(lv.in.cur_pixels);
      attempt.max_tiles = std::max(attempt.max_tiles, lv.tiles);
    }
    if (attempt_blocks_ > 0) {
      icp_attempt_cuda(attempt, std::min(attempt_blocks_, std::max(attempt.max_tiles, 1)), tile_sums_.data(),
                       state_.data(), stream_);
    } else {
      for (int level = attempt.levels - 1; level >= 0; --level)
        for (int it = 0; it < attempt.level[level].iterations; ++it)
          icp_iteration_cuda(attempt.level[level].in, tile_sums_.data(), counter_.data(), state_.data(), level,
                             attempt.max_condition, stream_);
    }
    state_.copy_to_host_async(host_state_.data(), 1, stream_);
    synchronize(stream_);
    return host_state_[0];
  }

  std::vector<float> download_reference_grey(int level) override {
    return download(levels_.at(level).ref_grey, stream_);
  }
  HostMaps download_frame_maps(int level) override {
    DeviceLevel& lv = levels_.at(level);
    return {lv.width, lv.height, download(lv.vertices, stream_), download(lv.normals, stream_)};
  }
  HostMaps download_reference_maps(int level) override {
    DeviceLevel& lv = levels_.at(level);
    return {lv.width, lv.height, download(lv.ref_vertices, stream_), download(lv.ref_normals, stream_)};
  }
  std::vector<float> download_filtered_depth(int level) override { return download(levels_.at(level).depth, stream_); }

 private:
  FusionParams params_;
  int width_, height_;
  int attempt_blocks_ = 0;  // resident blocks of the whole-attempt kernel; 0: one launch per iteration
  Stream stream_;           // declared before the buffers: they release on it
  DeviceBuffer<float> input_, raw_;
  std::vector<DeviceLevel> levels_;
  DeviceBuffer<float> tile_sums_;
  DeviceBuffer<unsigned int> counter_;
  DeviceBuffer<unsigned long long> valid_;
  DeviceBuffer<IcpState> state_;
  PinnedBuffer<double> host_sums_;
  PinnedBuffer<IcpState> host_state_;
  PinnedBuffer<unsigned long long> host_valid_;
};

}  // namespace

std::unique_ptr<TrackingBackend> make_cuda_tracking(const Device& device, const FusionParams& params, int width,
                                                    int height) {
  return std::make_unique<CudaTracking>(device, params, width, height);  // the engine has made `device` current
}

}  // namespace s3d::fusion::detail
