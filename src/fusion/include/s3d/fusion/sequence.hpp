#pragma once
// A depth sequence fused frame by frame (what icp-fuse does with one item): the next frames are read on worker
// threads while the engine tracks the current one; the engine is built at the first readable frame, whose size
// and camera it takes; every frame gets a record; the mesh or the cloud is extracted at the end. The caller
// reads the files (a FrameReader), so this library opens none.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/image.hpp"
#include "s3d/core/point_cloud.hpp"
#include "s3d/fusion/fusion_engine.hpp"
#include "s3d/fusion/trajectory.hpp"

namespace s3d::fusion {

/// Where a frame comes from (for its record and messages).
struct FrameSource {
  std::size_t index = 0;  ///< the frame's number in its sequence
  double timestamp = 0.0;
  std::string file;  ///< its depth file
};

/// A frame as the reader returns it.
struct LoadedFrame {
  Image<float> depth;       ///< metres, 0 = no depth
  Image<std::uint8_t> rgb;  ///< interleaved RGB of the depth's size; empty: fused without colour
  std::string error;        ///< the depth could not be read: the frame is skipped
  std::string color_error;  ///< why the colour is missing when it was asked for
  double read_ms = 0.0;     ///< reading and decoding
};

/// What became of one frame.
struct FrameRecord {
  FrameSource source;
  bool processed = false;  ///< false: not read, or another size than the first frame (no pose)
  FrameResult result;
  std::string error;        ///< why it was not processed
  bool color = false;       ///< its colour image was integrated
  std::string color_error;  ///< why it was not (the depth still was)
  double read_ms = 0.0;     ///< reading and decoding (overlapped with the previous frame's tracking)
  double wait_ms = 0.0;     ///< how long tracking waited for it
};

struct SequenceOptions {
  FusionParams params;  ///< `camera` is replaced by what SequenceCallbacks::camera returns
  bool extract_mesh = false;
  bool extract_cloud = false;
  std::size_t read_ahead = 4;  ///< frames read at once ahead of the one tracked (>= 1)
  std::string name;            ///< the sequence, for messages
};

struct FusedSequence {
  std::vector<FrameRecord> frames;  ///< in order; fewer than listed when interrupted
  Trajectory trajectory;            ///< the processed frames' poses
  std::optional<Mesh> mesh;         ///< when asked for and not interrupted
  std::optional<SurfaceCloud> cloud;
  CameraIntrinsics camera;
  int width = 0, height = 0;
  bool interrupted = false;
  double track_seconds = 0.0;    ///< the frame loop, reads included
  double extract_seconds = 0.0;  ///< mesh and cloud
};

struct SequenceCallbacks {
  /// Frame `k` of the list; called on worker threads, several at once. Errors go into LoadedFrame::error.
  std::function<LoadedFrame(std::size_t k)> read;
  /// The camera for frames of width x height, asked once, at the first readable frame; may throw.
  std::function<CameraIntrinsics(int width, int height)> camera;
  /// Polled before each frame: true stops the sequence (FusedSequence::interrupted). May be empty.
  std::function<bool()> interrupted;
  /// The camera's motion from the last good frame to the current one (the current camera's pose in the last
  /// good one's frame) found by other means than ICP, e.g. estimate_feature_motion; nullopt when it finds none.
  /// The frames come with their positions in the list (to read what the reader left out, such as colour).
  /// Asked only when the engine knows no motion (FusionEngine::knows_motion: the first step, after lost
  /// frames). May be empty.
  std::function<std::optional<Eigen::Isometry3d>(std::size_t last_good_k, const LoadedFrame& last_good, std::size_t k,
                                                 const LoadedFrame& current, const CameraIntrinsics& camera)>
      motion;
  /// After each frame's record (logging). May be empty.
  std::function<void(const FrameRecord&)> on_frame;
  /// After the last frame, before the extraction (not called when interrupted): may throw to fail the
  /// sequence without extracting (a tracking the data does not support). May be empty.
  std::function<void(const FusedSequence&)> on_frames_done;
};

/// Fuses `frames` on `device`. @throws DataError when no frame could be read (naming the first error), what the
/// camera callback or the engine throw; a frame that cannot be read, or has another size, is a record, not an
/// exception.
FusedSequence fuse_sequence(const Device& device, const std::vector<FrameSource>& frames,
                            const SequenceOptions& options, const SequenceCallbacks& callbacks);

/// How tracking went over the frames: a count per status of the processed ones, and what was not processed.
struct TrackingSummary {
  std::size_t processed = 0;
  std::size_t first = 0;
  std::size_t tracked = 0;
  std::size_t recovered = 0;
  std::size_t lost = 0;
  std::size_t invalid = 0;                     ///< frames without enough valid depth
  std::size_t unreadable = 0;                  ///< not processed: not read, or another size than the first frame
  std::size_t by_previous_frame = 0;           ///< frame to model: tracked against the previous frame instead
  std::size_t color = 0;                       ///< with their colour image integrated
  double compute_ms = 0.0;                     ///< pre-processing, tracking, integration and ray casting, summed
  std::int64_t volume_blocks = 0;              ///< sparse volume: blocks allocated after the last frame
  std::int64_t volume_blocks_refused = 0;      ///< sparse volume: blocks the full pool refused, all frames
  const FrameRecord* first_lost = nullptr;     ///< into the records given
  const FrameRecord* first_refused = nullptr;  ///< the first frame with refused blocks, into the records given
  /// Whether the data supports the trajectory: some frame had depth, and at most `max_lost` of the processed
  /// frames were lost.
  bool supported(double max_lost) const {
    return !(processed > 0 && invalid == processed) &&
           (lost == 0 || static_cast<double>(lost) <= max_lost * static_cast<double>(processed));
  }
};
TrackingSummary summarize_tracking(const std::vector<FrameRecord>& frames);

/// Where the processed frames whose sequence index lies in [first, last) sit in the trajectory (which holds
/// the processed frames only, in order): the estimate's [first_index, last_index) of an EvalOptions.
std::pair<std::size_t, std::size_t> trajectory_range(const std::vector<FrameRecord>& frames, std::size_t first,
                                                     std::size_t last);

/// The mesh as a cloud with faces, ready for a PLY: vertex x y z nx ny nz [red green blue], face
/// vertex_indices (uint8 count, int32 indices).
PointCloud mesh_to_cloud(const Mesh& mesh);
/// The zero crossing's points: x y z nx ny nz [red green blue].
PointCloud surface_to_cloud(const SurfaceCloud& surface);

}  // namespace s3d::fusion
