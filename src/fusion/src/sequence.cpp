// The sequence loop of sequence.hpp: a bounded read-ahead of futures, the engine at the first readable frame.
#include "s3d/fusion/sequence.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>

#include "s3d/core/errors.hpp"

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
  const auto t_track = Clock::now();
  // Read-ahead: the next frames are read and decoded, each on its own thread, while frame k is tracked; one
  // reader alone (a 16-bit PNG and a JPEG, 6-9 ms) is slower than a GPU frame (~1.7 ms).
  std::deque<std::future<LoadedFrame>> ahead;
  std::size_t requested = 0;
  auto request_more = [&] {
    for (; requested < frames.size() && ahead.size() < options.read_ahead; ++requested)
      ahead.push_back(std::async(std::launch::async, callbacks.read, requested));
  };
  // Every read in flight ends before the reader's captures go out of scope, on every path out.
  struct Drain {
    std::deque<std::future<LoadedFrame>>& ahead;
    ~Drain() {
      for (auto& f : ahead)
        if (f.valid()) f.wait();
    }
  } drain{ahead};
  request_more();
  std::string first_error;
  std::optional<LoadedFrame> last_good;  // kept only for callbacks.motion
  std::size_t last_good_k = 0;
  for (std::size_t k = 0; k < frames.size(); ++k) {
    if (callbacks.interrupted && callbacks.interrupted()) {
      out.interrupted = true;
      break;
    }
    const auto t_wait = Clock::now();
    LoadedFrame cur = ahead.front().get();
    ahead.pop_front();
    request_more();
    FrameRecord rec;
    rec.source = frames[k];
    rec.read_ms = cur.read_ms;
    rec.wait_ms = ms_since(t_wait);
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
    out.frames.push_back(std::move(rec));
  }
  for (auto& f : ahead) f.wait();  // an interrupt leaves reads in flight
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
