// The sequence loop of sequence.hpp: frames read ahead on worker threads through the ordered stages, tracked in
// order, the engine made at the first readable frame.
#include "s3d/fusion/sequence.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>

#include "s3d/core/errors.hpp"
#include "s3d/core/ordered_stages.hpp"
#include "s3d/core/worker_pool.hpp"

namespace s3d::fusion {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string size_text(int width, int height) { return std::to_string(width) + "x" + std::to_string(height); }

}  // namespace

FusedSequence fuse_sequence(const Device& device, const std::vector<FrameSource>& frames,
                            const SequenceOptions& options, const SequenceCallbacks& callbacks) {
  S3D_EXPECTS(callbacks.read && callbacks.camera, "fuse_sequence: a frame reader and a camera callback are needed");
  S3D_EXPECTS(options.read_ahead >= 1, "fuse_sequence: read_ahead must be at least 1");
  FusedSequence out;
  std::optional<FusionEngine> engine;
  FusionParams params = options.params;
  std::string first_error;
  std::optional<LoadedFrame> last_good;  // kept only for callbacks.motion
  std::size_t last_good_k = 0;
  std::exception_ptr failure;  // what tracking threw: the sequence fails with it once the reads are done

  // Frame k is tracked on this thread while the next frames are read and decoded on `read_ahead` threads (one
  // reader alone, a 16-bit PNG and a JPEG in 6-9 ms, is slower than a GPU frame of ~1.7 ms), through the
  // ordered stages the tools' frame uses (s3d/core/ordered_stages.hpp).
  std::vector<std::optional<LoadedFrame>> loaded(frames.size());
  std::vector<std::exception_ptr> read_failures(frames.size());  // a reader that threw: the sequence fails
  WorkerPool readers(static_cast<int>(options.read_ahead));
  OrderedStageCallbacks stages;
  stages.load = [&](std::size_t k) {
    try {
      loaded[k] = callbacks.read(k);
    } catch (...) {
      read_failures[k] = std::current_exception();
    }
  };
  const auto t_track = Clock::now();
  auto t_ready = t_track;  // when this thread was last ready for the next frame
  stages.handle = [&](std::size_t k, std::size_t) {
    if (read_failures[k]) {
      failure = read_failures[k];
      return false;
    }
    LoadedFrame cur = std::move(*loaded[k]);
    loaded[k].reset();
    FrameRecord rec;
    rec.source = frames[k];
    rec.read_ms = cur.read_ms;
    rec.wait_ms = ms_since(t_ready);
    try {
      if (cur.error.empty() && engine && (cur.depth.width != out.width || cur.depth.height != out.height))
        cur.error = frames[k].file + ": " + size_text(cur.depth.width, cur.depth.height) +
                    " but the sequence's first frame is " + size_text(out.width, out.height);
      if (cur.error.empty() && !engine) {
        out.width = cur.depth.width;
        out.height = cur.depth.height;
        out.camera = callbacks.camera(out.width, out.height);
        params.camera = out.camera;
        engine.emplace(device, params, out.width, out.height);
      }
      if (!cur.error.empty()) {
        rec.error = cur.error;
        if (first_error.empty()) first_error = cur.error;
      } else {
        rec.color_error = cur.color_error;
        rec.color = !cur.rgb.empty();
        std::optional<Eigen::Isometry3d> motion;
        if (callbacks.motion && last_good && !engine->knows_motion())
          motion = callbacks.motion(last_good_k, *last_good, k, cur, out.camera);
        rec.result = engine->process(cur.depth.cview(), rec.color ? cur.rgb.data.data() : nullptr, motion);
        rec.processed = true;
        out.trajectory.push_back({rec.source.timestamp, rec.result.pose});
        const FrameStatus status = rec.result.status;
        if (callbacks.motion &&
            (status == FrameStatus::kFirst || status == FrameStatus::kTracked || status == FrameStatus::kRecovered)) {
          last_good = std::move(cur);
          last_good_k = k;
        }
      }
      if (callbacks.on_frame) callbacks.on_frame(rec);
    } catch (...) {
      failure = std::current_exception();
      return false;
    }
    out.frames.push_back(std::move(rec));
    t_ready = Clock::now();
    return true;
  };
  // Polled before each frame (and once more after the last, which is no interruption).
  stages.stop_requested = [&] {
    if (!failure && out.frames.size() < frames.size() && callbacks.interrupted && callbacks.interrupted())
      out.interrupted = true;
    return out.interrupted;
  };
  // No finish stage: a frame leaves the window once tracked, so the window holds the frame being tracked and the
  // read_ahead frames being read (k+1..k+read_ahead overlap the tracking of frame k).
  run_ordered_stages(frames.size(), options.read_ahead + 1, readers, stages);
  if (failure) std::rethrow_exception(failure);
  out.track_seconds = ms_since(t_track) / 1000.0;
  if (!engine)
    throw DataError(options.name + ": no frame could be read (" + (first_error.empty() ? "none" : first_error) + ")");
  if (!out.interrupted && callbacks.on_frames_done) callbacks.on_frames_done(out);
  if (!out.interrupted) {
    const auto t_extract = Clock::now();
    if (options.extract_mesh) out.mesh = engine->extract_mesh();
    if (options.extract_cloud) out.cloud = engine->extract_cloud();
    out.extract_seconds = ms_since(t_extract) / 1000.0;
  }
  return out;
}

TrackingSummary summarize_tracking(const std::vector<FrameRecord>& frames) {
  TrackingSummary s;
  for (const auto& f : frames) {
    if (!f.processed) {
      ++s.unreadable;
      continue;
    }
    const FrameResult& r = f.result;
    ++s.processed;
    s.first += r.status == FrameStatus::kFirst;
    s.tracked += r.status == FrameStatus::kTracked;
    s.recovered += r.status == FrameStatus::kRecovered;
    s.invalid += r.status == FrameStatus::kInvalid;
    s.by_previous_frame += r.frame_fallback;
    s.color += f.color;
    s.compute_ms += r.preprocess_ms + r.track_ms + r.integrate_ms + r.raycast_ms;
    s.volume_blocks = std::max(s.volume_blocks, r.volume_blocks);
    s.volume_blocks_refused += r.volume_blocks_refused;
    if (r.volume_blocks_refused > 0 && !s.first_refused) s.first_refused = &f;
    if (r.status != FrameStatus::kLost) continue;
    ++s.lost;
    if (!s.first_lost) s.first_lost = &f;
  }
  return s;
}

std::pair<std::size_t, std::size_t> trajectory_range(const std::vector<FrameRecord>& frames, std::size_t first,
                                                     std::size_t last) {
  std::size_t from = 0, to = 0;  // processed frames before `first`, before `last` (indices ascend)
  for (const auto& f : frames) {
    if (!f.processed) continue;
    from += f.source.index < first;
    to += f.source.index < last;
  }
  return {from, to};
}

}  // namespace s3d::fusion
