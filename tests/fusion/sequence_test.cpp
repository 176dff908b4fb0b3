// fuse_sequence: the frame loop icp-fuse runs, on an analytic box scene (CPU). Its poses are the engine's own,
// frame by frame; unreadable frames, frames of another size, an interrupt and a failed check are records or
// errors, never a pose; the mesh and the cloud become point clouds with every attribute.
#include "s3d/fusion/sequence.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "s3d/core/errors.hpp"
#include "tracking_fixtures.hpp"

namespace s3d::fusion {
namespace {

using test::Box;

constexpr int kWidth = 160, kHeight = 120;
const Box kRoom{{-1.0, -0.8, -0.5}, {1.0, 0.8, 3.0}};
const std::vector<Box> kBoxes{{{-0.6, 0.2, 1.5}, {-0.1, 0.8, 2.0}}, {{0.3, -0.4, 2.0}, {0.8, 0.1, 2.6}}};

FusionParams params() {
  FusionParams p;
  p.camera = {131.25f, 131.25f, 79.5f, 59.5f};
  p.depth.bilateral = false;
  p.initial_pose = Eigen::Isometry3d::Identity();
  p.initial_pose.translation() = Eigen::Vector3d(0.0, 0.0, -0.4);
  p.volume.resolution = {64, 64, 64};
  p.volume.size = {2.4f, 2.4f, 3.6f};
  p.volume.origin = {-1.2f, -1.2f, -0.6f};
  return p;
}

/// The camera moving 2 cm along x and 1 degree about y per frame.
Image<float> frame_depth(int k, const FusionParams& p) {
  Eigen::Isometry3d pose = p.initial_pose;
  pose.translate(Eigen::Vector3d(0.02 * k, 0.0, 0.0));
  pose.rotate(Eigen::AngleAxisd(k * M_PI / 180.0, Eigen::Vector3d::UnitY()));
  return test::render_boxes(p.camera, kWidth, kHeight, pose, &kRoom, kBoxes);
}

struct SequenceRun {
  std::vector<FrameSource> sources;
  SequenceOptions options;
  SequenceCallbacks callbacks;
  std::atomic<int> camera_calls{0};
};

void prepare(SequenceRun& run, int frames) {
  run.options.params = params();
  run.options.name = "boxes";
  for (int k = 0; k < frames; ++k)
    run.sources.push_back({static_cast<std::size_t>(k), 0.1 * k, "frame" + std::to_string(k) + ".png"});
  const FusionParams p = run.options.params;
  run.callbacks.read = [p](std::size_t k) {
    LoadedFrame f;
    f.depth = frame_depth(static_cast<int>(k), p);
    return f;
  };
  run.callbacks.camera = [&run, p](int w, int h) {
    ++run.camera_calls;
    EXPECT_EQ(w, kWidth);
    EXPECT_EQ(h, kHeight);
    return p.camera;
  };
}

TEST(FuseSequence, PosesAreTheEnginesFrameByFrame) {
  SequenceRun run;
  prepare(run, 6);
  run.options.extract_mesh = true;
  run.options.extract_cloud = true;
  std::vector<std::size_t> seen;
  run.callbacks.on_frame = [&seen](const FrameRecord& r) { seen.push_back(r.source.index); };
  bool checked = false;
  run.callbacks.on_frames_done = [&checked](const FusedSequence& f) { checked = f.frames.size() == 6; };
  const FusedSequence fused = fuse_sequence(Device::parse("cpu"), run.sources, run.options, run.callbacks);

  FusionEngine engine(Device::parse("cpu"), params(), kWidth, kHeight);
  ASSERT_EQ(fused.frames.size(), 6u);
  ASSERT_EQ(fused.trajectory.size(), 6u);
  for (int k = 0; k < 6; ++k) {
    const Image<float> depth = frame_depth(k, params());
    const FrameResult expected = engine.process(depth.cview());
    const FrameRecord& r = fused.frames[k];
    EXPECT_TRUE(r.processed);
    EXPECT_EQ(r.result.status, expected.status) << k;
    EXPECT_TRUE(r.result.pose.matrix() == expected.pose.matrix()) << k;
    EXPECT_EQ(fused.trajectory[k].timestamp, 0.1 * k);
    EXPECT_TRUE(fused.trajectory[k].pose.matrix() == expected.pose.matrix());
  }
  EXPECT_EQ(fused.frames[5].result.status, FrameStatus::kTracked);
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(checked);
  EXPECT_EQ(run.camera_calls.load(), 1);
  EXPECT_EQ(fused.width, kWidth);
  ASSERT_TRUE(fused.mesh && fused.cloud);
  EXPECT_EQ(fused.mesh->vertices, engine.extract_mesh().vertices);
  EXPECT_EQ(fused.cloud->points, engine.extract_cloud().points);
  const TrackingSummary t = summarize_tracking(fused.frames);
  EXPECT_EQ(t.processed, 6u);
  EXPECT_EQ(t.lost, 0u);
  EXPECT_TRUE(t.supported(0.0));
}

TEST(FuseSequence, AMotionIsAskedForOnlyWhereTheEngineKnowsNone) {
  // The motion is asked for at the first step only (from frame 0 to 1), with the frames it concerns; frame 1
  // starts from it, and every later frame from the engine's prior.
  SequenceRun run;
  prepare(run, 6);
  const FusionParams p = run.options.params;
  std::vector<std::pair<std::size_t, std::size_t>> asked;
  run.callbacks.motion = [&asked, p](std::size_t last_k, const LoadedFrame& last, std::size_t k,
                                     const LoadedFrame& current, const CameraIntrinsics& camera) {
    asked.emplace_back(last_k, k);
    EXPECT_TRUE(last.depth.data == frame_depth(static_cast<int>(last_k), p).data);
    EXPECT_TRUE(current.depth.data == frame_depth(static_cast<int>(k), p).data);
    EXPECT_EQ(camera.fx, p.camera.fx);
    // The true step (2 cm along x, 1 degree about y), as a feature match would measure it.
    Eigen::Isometry3d step = Eigen::Isometry3d::Identity();
    step.translate(Eigen::Vector3d(0.02, 0.0, 0.0));
    step.rotate(Eigen::AngleAxisd(M_PI / 180.0, Eigen::Vector3d::UnitY()));
    return std::optional<Eigen::Isometry3d>(step);
  };
  const FusedSequence fused = fuse_sequence(Device::parse("cpu"), run.sources, run.options, run.callbacks);
  EXPECT_EQ(asked, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}}));
  ASSERT_EQ(fused.frames.size(), 6u);
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(fused.frames[k].result.motion_start, k == 1) << k;
  EXPECT_EQ(fused.frames[5].result.status, FrameStatus::kTracked);
}

TEST(FuseSequence, UnreadableAndMisSizedFramesAreRecordsWithoutPoses) {
  SequenceRun run;
  prepare(run, 5);
  const FusionParams p = run.options.params;
  run.callbacks.read = [p](std::size_t k) {
    LoadedFrame f;
    if (k == 0 || k == 2) {
      f.error = "frame" + std::to_string(k) + ".png: truncated";
      return f;
    }
    f.depth = k == 3 ? Image<float>(kWidth / 2, kHeight / 2, 1, 1.0f) : frame_depth(static_cast<int>(k), p);
    return f;
  };
  const FusedSequence fused = fuse_sequence(Device::parse("cpu"), run.sources, run.options, run.callbacks);
  ASSERT_EQ(fused.frames.size(), 5u);
  EXPECT_FALSE(fused.frames[0].processed);
  EXPECT_EQ(fused.frames[0].error, "frame0.png: truncated");
  EXPECT_EQ(fused.frames[1].result.status, FrameStatus::kFirst);
  EXPECT_FALSE(fused.frames[2].processed);
  EXPECT_FALSE(fused.frames[3].processed);
  EXPECT_EQ(fused.frames[3].error, "frame3.png: 80x60 but the sequence's first frame is 160x120");
  EXPECT_TRUE(fused.frames[4].processed);
  EXPECT_EQ(fused.trajectory.size(), 2u);
  EXPECT_FALSE(fused.mesh.has_value());
}

TEST(FuseSequence, NoReadableFrameInterruptAndFailedCheck) {
  SequenceRun none;
  prepare(none, 3);
  none.callbacks.read = [](std::size_t k) {
    LoadedFrame f;
    f.error = "f" + std::to_string(k) + ": missing";
    return f;
  };
  try {
    fuse_sequence(Device::parse("cpu"), none.sources, none.options, none.callbacks);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "boxes: no frame could be read (f0: missing)");
  }

  SequenceRun stopped;
  prepare(stopped, 6);
  stopped.options.extract_mesh = true;
  int polls = 0;
  bool done_called = false;
  stopped.callbacks.interrupted = [&polls] { return ++polls > 2; };
  stopped.callbacks.on_frames_done = [&done_called](const FusedSequence&) { done_called = true; };
  const FusedSequence part = fuse_sequence(Device::parse("cpu"), stopped.sources, stopped.options, stopped.callbacks);
  EXPECT_TRUE(part.interrupted);
  EXPECT_EQ(part.frames.size(), 2u);
  EXPECT_FALSE(part.mesh.has_value());
  EXPECT_FALSE(done_called);

  SequenceRun failed;
  prepare(failed, 3);
  failed.callbacks.on_frames_done = [](const FusedSequence&) { throw DataError("boxes: not supported"); };
  EXPECT_THROW(fuse_sequence(Device::parse("cpu"), failed.sources, failed.options, failed.callbacks), DataError);
}

TEST(FuseSequence, TheNextReadAheadFramesAreReadWhileAFrameIsTracked) {
  // While frame k is tracked (on_frame runs inside its handling), the reads of frames k+1..k+read_ahead have
  // started: each waits here for them, and would wait in vain if they were queued behind frame k.
  SequenceRun overlapped;
  constexpr int kFrames = 10;
  constexpr std::size_t kAhead = 3;
  prepare(overlapped, kFrames);
  overlapped.options.read_ahead = kAhead;
  std::atomic<std::size_t> started{0};
  const FusionParams p = overlapped.options.params;
  overlapped.callbacks.read = [p, &started](std::size_t k) {
    ++started;
    LoadedFrame f;
    f.depth = frame_depth(static_cast<int>(k), p);
    return f;
  };
  std::vector<std::size_t> not_overlapped;
  overlapped.callbacks.on_frame = [&](const FrameRecord& r) {
    const std::size_t want = std::min<std::size_t>(kFrames, r.source.index + 1 + kAhead);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < want && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (started.load() < want) not_overlapped.push_back(r.source.index);
  };
  const FusedSequence fused =
      fuse_sequence(Device::parse("cpu"), overlapped.sources, overlapped.options, overlapped.callbacks);
  EXPECT_EQ(fused.frames.size(), static_cast<std::size_t>(kFrames));
  EXPECT_TRUE(not_overlapped.empty()) << "frame " << not_overlapped.front() << " was tracked alone";
  EXPECT_FALSE(fused.interrupted);
}

TEST(FuseSequence, AnInterruptAfterTheLastFrameIsNone) {
  SequenceRun run;
  prepare(run, 3);
  std::atomic<bool> signalled{false};
  run.callbacks.on_frame = [&signalled](const FrameRecord& r) { signalled = r.source.index == 2; };
  run.callbacks.interrupted = [&signalled] { return signalled.load(); };
  const FusedSequence fused = fuse_sequence(Device::parse("cpu"), run.sources, run.options, run.callbacks);
  EXPECT_EQ(fused.frames.size(), 3u);
  EXPECT_FALSE(fused.interrupted);
}

TEST(FuseSequence, AReaderOrCameraThatThrowsFailsTheSequence) {
  SequenceRun throwing;
  prepare(throwing, 8);
  throwing.options.read_ahead = 3;
  const FusionParams p = throwing.options.params;
  throwing.callbacks.read = [p](std::size_t k) {
    LoadedFrame f;
    f.depth = frame_depth(static_cast<int>(k), p);
    if (k == 4) throw std::runtime_error("frame4.png: out of memory while decoding");
    return f;
  };
  std::vector<std::size_t> tracked;
  throwing.callbacks.on_frame = [&tracked](const FrameRecord& r) { tracked.push_back(r.source.index); };
  EXPECT_THROW(fuse_sequence(Device::parse("cpu"), throwing.sources, throwing.options, throwing.callbacks),
               std::runtime_error);
  EXPECT_EQ(tracked, (std::vector<std::size_t>{0, 1, 2, 3}));  // in order, up to the frame that failed

  SequenceRun camera;
  prepare(camera, 4);
  camera.callbacks.camera = [](int, int) -> CameraIntrinsics { throw DataError("K.txt: not a 3x3 matrix"); };
  EXPECT_THROW(fuse_sequence(Device::parse("cpu"), camera.sources, camera.options, camera.callbacks), DataError);
}

TEST(TrackingSummary, CountsEachStatusLostAndInvalidFrames) {
  std::vector<FrameRecord> frames(7);
  const FrameStatus status[] = {FrameStatus::kFirst,    FrameStatus::kTracked, FrameStatus::kLost,
                                FrameStatus::kLost,     FrameStatus::kInvalid, FrameStatus::kTracked,
                                FrameStatus::kRecovered};
  for (int k = 0; k < 7; ++k) {
    frames[k].processed = k != 5;
    frames[k].source.index = 10 + k;
    frames[k].result.status = status[k];
    frames[k].result.preprocess_ms = 1.0 + k;
    frames[k].result.raycast_ms = 0.5;
  }
  frames[1].color = frames[6].color = true;
  frames[5].color = true;  // not processed: not counted
  frames[6].result.frame_fallback = true;
  const TrackingSummary t = summarize_tracking(frames);
  EXPECT_EQ(t.processed, 6u);
  EXPECT_EQ(t.first, 1u);
  EXPECT_EQ(t.tracked, 1u);
  EXPECT_EQ(t.recovered, 1u);
  EXPECT_EQ(t.lost, 2u);
  EXPECT_EQ(t.invalid, 1u);
  EXPECT_EQ(t.unreadable, 1u);
  EXPECT_EQ(t.by_previous_frame, 1u);
  EXPECT_EQ(t.color, 2u);
  EXPECT_DOUBLE_EQ(t.compute_ms, (1 + 2 + 3 + 4 + 5 + 7) + 6 * 0.5);
  ASSERT_NE(t.first_lost, nullptr);
  EXPECT_EQ(t.first_lost->source.index, 12u);
  EXPECT_TRUE(t.supported(2.0 / 6));
  EXPECT_FALSE(t.supported(0.33));
  std::vector<FrameRecord> empty_depth(2);
  for (auto& f : empty_depth) {
    f.processed = true;
    f.result.status = FrameStatus::kInvalid;
  }
  EXPECT_FALSE(summarize_tracking(empty_depth).supported(1.0));
}

TEST(TrajectoryRange, SequenceIndicesBecomePositionsAmongTheProcessedFrames) {
  // Frames 3..9 of a sequence; 5 and 8 unreadable: the trajectory holds 3, 4, 6, 7, 9 at positions 0..4.
  std::vector<FrameRecord> frames(7);
  for (std::size_t k = 0; k < frames.size(); ++k) {
    frames[k].source.index = 3 + k;
    frames[k].processed = frames[k].source.index != 5 && frames[k].source.index != 8;
  }
  using Range = std::pair<std::size_t, std::size_t>;
  EXPECT_EQ(trajectory_range(frames, 0, 100), (Range{0, 5}));
  EXPECT_EQ(trajectory_range(frames, 5, 8), (Range{2, 4}));  // frames 6, 7
  EXPECT_EQ(trajectory_range(frames, 6, 9), (Range{2, 4}));
  EXPECT_EQ(trajectory_range(frames, 9, std::numeric_limits<std::size_t>::max()), (Range{4, 5}));
  EXPECT_EQ(trajectory_range(frames, 20, 30), (Range{5, 5}));  // empty: the evaluation says so
}

TEST(SurfaceClouds, MeshAndPointsKeepNormalsColoursAndFaces) {
  Mesh mesh;
  mesh.vertices = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0};
  mesh.normals = {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, -1};
  mesh.colors = {255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9};
  mesh.triangles = {0, 1, 2, 2, 1, 3};
  const PointCloud c = mesh_to_cloud(mesh);
  ASSERT_EQ(c.size(), 4u);
  for (const char* name : {"nx", "ny", "nz", "red", "green", "blue"}) ASSERT_NE(c.find(name), nullptr) << name;
  EXPECT_EQ(c.find("nz")->value(3), -1.0);
  EXPECT_EQ(c.find("green")->value(1), 255.0);
  EXPECT_EQ(c.find("red")->type, ScalarType::kUint8);
  ASSERT_EQ(c.elements.size(), 1u);
  const AttributeColumn& faces = c.elements[0].properties[0];
  EXPECT_EQ(c.elements[0].name, "face");
  EXPECT_EQ(faces.name, "vertex_indices");
  ASSERT_EQ(c.elements[0].count, 2u);
  EXPECT_EQ(faces.length(1), 3u);
  EXPECT_EQ(faces.value(1, 2), 3.0);

  SurfaceCloud surface;
  surface.points = {0, 0, 1, 0, 0, 2};
  surface.normals = {0, 0, -1, 0, 0, -1};
  const PointCloud s = surface_to_cloud(surface);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.find("red"), nullptr);  // no colours
  EXPECT_TRUE(s.elements.empty());
}

}  // namespace
}  // namespace s3d::fusion
