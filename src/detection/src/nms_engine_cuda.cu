// NmsEngine, CUDA backend: owns every stage's buffers for its lifetime and runs the pipeline
//   fused small path (hard, axis-aligned, small) | fused grid path (the same, up to 16384 boxes)
//   | rank -> hard NMS or soft-NMS, then max_dets.
// Device-resident calls that need no host synchronization are captured into a CUDA graph when they repeat.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "nms_engine_impl.hpp"
#include "nms_stages_cuda.cuh"
#include "s3d/core/cuda_graph.cuh"
#include "s3d/core/event.hpp"
#include "s3d/core/scoped_device.hpp"

namespace s3d::detection::detail {
namespace {

/// What makes two device-resident calls the same launch sequence on the same memory. The stream is held by its
/// unique id, not its handle: a destroyed stream's address can be reused by a new one, and no handle is kept
/// past the call.
struct CallKey {
  const void* boxes = nullptr;
  const void* scores = nullptr;
  const void* groups = nullptr;
  const void* images = nullptr;
  std::int64_t count = -1;
  unsigned long long stream_id = 0;
  NmsParams params;

  CallKey() = default;
  CallKey(const NmsInput& in, const NmsParams& prm, unsigned long long stream)
      : boxes(in.boxes),
        scores(in.scores),
        groups(in.group_ids),
        images(in.image_ids),
        count(in.count),
        stream_id(stream),
        params(prm) {}

  bool operator==(const CallKey& o) const {
    const NmsParams &a = params, &b = o.params;
    return boxes == o.boxes && scores == o.scores && groups == o.groups && images == o.images && count == o.count &&
           stream_id == o.stream_id && a.iou_threshold == b.iou_threshold &&
           a.suppress_at_equal == b.suppress_at_equal && a.pixel_offset == b.pixel_offset && a.method == b.method &&
           a.sigma == b.sigma && a.soft_min_score == b.soft_min_score && a.min_score == b.min_score &&
           a.pre_top_k == b.pre_top_k && a.max_dets == b.max_dets && a.rotated == b.rotated;
  }
};

class CudaEngine final : public NmsEngine::Impl {
 public:
  explicit CudaEngine(const Device& device) : Impl(device) {
    const ScopedDevice scope(device.index());
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device.index()));
    int optin = 0;
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device.index()));
    soft_.shared_boxes_max = soft_shared_boxes_max(optin);
    fused_.max_boxes = fused_max_boxes_for(optin, fused_max_boxes_from_env());
    configure_fused_kernels(fused_.max_boxes);
    configure_fused_grid(device.index(), optin, fused_grid_max_boxes_from_env(), fused_grid_);
  }

  /// Each buffer is freed on the stream that last grew it, which is not ordered after a later call on another
  /// stream: every call's work must be done before the members are released. The engine waits on its own
  /// events, recorded at the end of each call, never on the callers' streams (which may be gone by now).
  ~CudaEngine() noexcept override {
    try {
      const ScopedDevice scope(device_.index());
      for (auto& done : call_done_) done.event.synchronize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "s3d: warning: NmsEngine: cannot wait for its last calls: %s\n", e.what());
    }
  }

  NmsResult run(const NmsInput& in, const NmsParams& params, StreamHandle st) override {
    const ScopedDevice scope(device_.index());
    forget_graph();  // the uploads and this run may reallocate the buffers a graph points to
    const std::size_t n = static_cast<std::size_t>(in.count);
    NmsInput dev;
    dev.count = in.count;
    if (n) {
      staged_boxes_.copy_from_host_async(in.boxes, n * params.box_dim(), st);
      staged_scores_.copy_from_host_async(in.scores, n, st);
      dev.boxes = staged_boxes_.data();
      dev.scores = staged_scores_.data();
      if (in.group_ids) {
        staged_groups_.copy_from_host_async(in.group_ids, n, st);
        dev.group_ids = staged_groups_.data();
      }
      if (in.image_ids) {
        staged_images_.copy_from_host_async(in.image_ids, n, st);
        dev.image_ids = staged_images_.data();
      }
    }
    enqueue(dev, params, st);
    note_call_done(st);
    return download_result(st);
  }

  /// Calls whose launch sequence needs no host synchronization (hard NMS of at most kBoundedMaskMaxTiles tiles,
  /// no active min_score / pre_top_k filter, max_dets without image ids; or a fused path) are captured into a
  /// graph the second time the same call is made, and the graph is replayed while it repeats: the same kernels
  /// on the same buffers, so results are identical. The first call runs eagerly and sizes every buffer, so the
  /// captured call allocates nothing; any other call runs eagerly and drops the graph (it may reallocate).
  void run_device_async(const NmsInput& in, const NmsParams& prm, StreamHandle st) override {
    const ScopedDevice scope(device_.index());
    queue_device_call(in, prm, st);
    note_call_done(st);
  }

  const std::int64_t* device_keep() const override { return result_.keep.data(); }
  const float* device_scores() const override { return result_.scores.data(); }
  const std::int64_t* device_keep_count() const override { return result_.count.data(); }

  NmsResult download(StreamHandle st) const override {
    const ScopedDevice scope(device_.index());
    return download_result(st);
  }

  NmsEngine::Stats last_stats() const override {
    NmsEngine::Stats st = stats_;
    if (grid_rounds_) {  // the fused grid path's round count, read lazily
      const ScopedDevice scope(device_.index());
      int rounds = 0;
      call_done_.at(last_call_).event.synchronize();
      S3D_CUDA_CHECK(cudaMemcpy(&rounds, fused_grid_.rounds.data(), sizeof(int), cudaMemcpyDeviceToHost));
      st.rounds = rounds;
    }
    if (mask_tiles_ > 0) {  // read lazily: the scan's round count and the mask's real pair count
      const ScopedDevice scope(device_.index());
      int rounds = 0;
      long long pairs = 0;
      call_done_.at(last_call_).event.synchronize();  // the last call only: other streams may keep running
      S3D_CUDA_CHECK(cudaMemcpy(&rounds, hard_.scan.rounds.data(), sizeof(int), cudaMemcpyDeviceToHost));
      S3D_CUDA_CHECK(
          cudaMemcpy(&pairs, hard_.mask.pair_offset.data() + mask_tiles_, sizeof(long long), cudaMemcpyDeviceToHost));
      st.rounds = rounds;
      st.tile_pairs = pairs;
    }
    return st;
  }

 private:
  /// The body of run_device_async: eager, captured or replayed (see there).
  void queue_device_call(const NmsInput& in, const NmsParams& prm, StreamHandle st) {
    const bool capturable =
        !graphs_disabled_ && st != nullptr && prm.method == NmsMethod::kHard && in.count > 0 &&
        (prm.max_dets == 0 || in.image_ids == nullptr) &&
        (fused_applies(in, prm, fused_.max_boxes) ||  // the fused paths apply min_score on the device
         fused_grid_applies(in, prm, fused_grid_.max_boxes) ||
         (in.count <= static_cast<std::int64_t>(kBoundedMaskMaxTiles) * kTile && !(prm.min_score > -INFINITY) &&
          (prm.pre_top_k == 0 || prm.pre_top_k >= in.count)));
    if (!capturable) {
      forget_graph();
      enqueue(in, prm, st);
      return;
    }
    unsigned long long stream_id = 0;
    S3D_CUDA_CHECK(cudaStreamGetId(st, &stream_id));
    const CallKey key(in, prm, stream_id);
    if (!graph_.empty() && key == graph_key_) {
      graph_.launch(st);
      stats_ = graph_stats_;
      mask_tiles_ = graph_mask_tiles_;
      grid_rounds_ = graph_grid_rounds_;
      stats_.graph = true;
      return;
    }
    graph_.reset();
    if (!(seen_ && key == seen_key_)) {
      enqueue(in, prm, st);
      seen_key_ = key;
      seen_ = true;
      return;
    }
    seen_ = false;
    if (!graph_.capture(st, [&] { enqueue(in, prm, st); })) {
      // Capture or instantiation is not supported here (e.g. the cooperative scan): eager from now on. Other
      // failures of the call propagate from capture() and leave graphs on.
      graphs_disabled_ = true;
      enqueue(in, prm, st);
      return;
    }
    graph_key_ = key;
    graph_stats_ = stats_;
    graph_mask_tiles_ = mask_tiles_;
    graph_grid_rounds_ = grid_rounds_;
    stats_.graph = true;
    graph_.launch(st);
  }

  /// Queues the whole call on `st` (synchronizing only where a stage says so).
  void enqueue(const NmsInput& in, const NmsParams& prm, StreamHandle st) {
    stats_ = {};
    stats_.rounds = -1;
    mask_tiles_ = 0;
    grid_rounds_ = false;
    const int n = static_cast<int>(in.count);
    result_.count.resize(1, st);
    S3D_CUDA_CHECK(cudaMemsetAsync(result_.count.data(), 0, sizeof(std::int64_t), st));
    result_.keep.resize(std::max(n, 1), st);
    result_.scores.resize(std::max(n, 1), st);
    if (n == 0) return;
    if (fused_applies(in, prm, fused_.max_boxes)) {
      stats_.boxes = n;  // upper bound: boxes failing min_score are dropped on the device
      stats_.tile_pairs = fused_nms(in, prm, fused_, result_, st);
      if (prm.max_dets > 0 && in.image_ids) apply_max_dets(in, prm, max_dets_, cub_, readback_, result_, st);
      return;
    }
    if (fused_grid_applies(in, prm, fused_grid_.max_boxes)) {
      stats_.boxes = n;  // upper bound, as above
      stats_.tile_pairs = fused_grid_nms(in, prm, sm_count_, fused_grid_, result_, st);
      grid_rounds_ = true;
      if (prm.max_dets > 0 && in.image_ids) apply_max_dets(in, prm, max_dets_, cub_, readback_, result_, st);
      return;
    }
    const Ranking ranked = rank_boxes(in, prm, rank_, cub_, readback_, st);
    if (ranked.boxes == 0) return;
    stats_.boxes = ranked.boxes;
    if (prm.method == NmsMethod::kHard) {
      const MaskShape shape = prm.rotated
                                  ? hard_nms<true>(in, prm, ranked, sm_count_, hard_, cub_, readback_, result_, st)
                                  : hard_nms<false>(in, prm, ranked, sm_count_, hard_, cub_, readback_, result_, st);
      stats_.tile_pairs = shape.pairs;  // priority-order mode: the bound; last_stats() reads the real count
      mask_tiles_ = shape.tiles;
    } else if (prm.rotated) {
      soft_nms<true>(in, prm, ranked, soft_, cub_, readback_, result_, st);
    } else {
      soft_nms<false>(in, prm, ranked, soft_, cub_, readback_, result_, st);
    }
    if (prm.max_dets > 0) apply_max_dets(in, prm, max_dets_, cub_, readback_, result_, st);
  }

  NmsResult download_result(StreamHandle st) const {
    NmsResult r;
    const long long k = readback_.read(reinterpret_cast<const long long*>(result_.count.data()), st);
    r.keep.resize(static_cast<std::size_t>(k));
    r.scores.resize(static_cast<std::size_t>(k));
    if (k > 0) {
      result_.keep.copy_to_host_async(r.keep.data(), static_cast<std::size_t>(k), st);
      result_.scores.copy_to_host_async(r.scores.data(), static_cast<std::size_t>(k), st);
      S3D_CUDA_CHECK(cudaStreamSynchronize(st));
    }
    return r;
  }

  /// Records the end of the call just queued on `st` in the engine's event for that stream (streams are told
  /// apart by their process-unique id, not by their handle, whose address a later stream may reuse).
  void note_call_done(StreamHandle st) {
    unsigned long long id = 0;
    S3D_CUDA_CHECK(cudaStreamGetId(st, &id));
    std::size_t i = 0;
    while (i < call_done_.size() && call_done_[i].stream_id != id) ++i;
    if (i == call_done_.size()) call_done_.push_back(CallDone{id, Event{}});
    call_done_[i].event.record(st);
    last_call_ = i;
  }

  void forget_graph() {
    graph_.reset();
    seen_ = false;
  }

  int sm_count_ = 0;
  CubScratch cub_;
  mutable HostReadback readback_;
  // host-path copies of the caller's arrays
  DeviceBuffer<float> staged_boxes_, staged_scores_;
  DeviceBuffer<std::int64_t> staged_groups_, staged_images_;
  RankBuffers rank_;
  HardBuffers hard_;
  SoftBuffers soft_;
  FusedBuffers fused_;
  FusedGridBuffers fused_grid_;
  MaxDetsBuffers max_dets_;
  DeviceResult result_;
  NmsEngine::Stats stats_;
  int mask_tiles_ = 0;        ///< tiles of the last call's sparse mask (0: none), for last_stats()
  bool grid_rounds_ = false;  ///< the last call took the fused grid path (its round count is on the device)
  // the graph of the last sync-free call, replayed while the same call repeats
  CudaGraph graph_;
  CallKey graph_key_, seen_key_;
  bool seen_ = false;             ///< the last call ran seen_key_ eagerly (its buffers are sized)
  bool graphs_disabled_ = false;  ///< the driver could not capture or instantiate a call on this engine
  NmsEngine::Stats graph_stats_;
  int graph_mask_tiles_ = 0;
  bool graph_grid_rounds_ = false;
  struct CallDone {
    unsigned long long stream_id;
    Event event;
  };
  std::vector<CallDone> call_done_;  ///< per stream used, the end of its last call (destructor, last_stats)
  std::size_t last_call_ = 0;        ///< index in call_done_ of the latest call
};

}  // namespace

std::unique_ptr<NmsEngine::Impl> make_cuda_engine(const Device& device) { return std::make_unique<CudaEngine>(device); }

}  // namespace s3d::detection::detail
