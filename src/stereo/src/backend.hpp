#pragma once
// Internal: the backend entry points behind the dispatchers (stages.cpp, sgm.cpp). Host functions in
// s3d::stereo::detail::cpu take host pointers; those in ::cuda take device pointers and a stream, queue
// work and never synchronize. No CUDA types here.
#include <cstddef>
#include <cstdint>

#include "s3d/core/event.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/core/views.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::stereo::detail {

struct CensusSpec {
  CensusKind kind = CensusKind::kFull;
  int width = 9;   ///< window width (odd)
  int height = 7;  ///< window height (odd)
};

/// One matching run: reference image is left (sign = -1: target x - d) or right (sign = +1: target x + d).
struct MatchSpec {
  int width = 0;
  int height = 0;
  int disparities = 0;
  int min_disparity = 0;
  int sign = -1;
  int max_cost = 62;  ///< census bits: cost of a target outside the image
  int paths = 8;
  int p1 = 10;
  int p2 = 120;
  int uniqueness = 0;
  bool subpixel = true;
  /// Right pixels closer than this to the right image's left edge take no disparity from the left volume
  /// (LrMethod::kVolume; wta_math.hpp's right_view_disparity): half the census window's width.
  int right_edge = 4;
  int lanes = 0;  ///< CUDA only: lanes per scanline (0 = automatic; 4/8/16/32 = experiment, src/stereo/experimental)
};

MatchSpec make_match_spec(const SgmParams& params, int width, int height, bool right_view);

namespace cpu {
template <typename T>
void census(ImageView<const T> image, CensusSpec spec, std::uint64_t* out);
/// Matching cost volume [y][x][d], uint8 (max_cost <= 62 fits).
void cost_volume(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& spec, std::uint8_t* cost);
/// Sum over paths of L_r = A + B ([y][x][d], dense; A: top-down sweep paths + left->right, B: bottom-up
/// sweep paths + right->left). `cost` from cost_volume().
void aggregate(const std::uint8_t* cost, const MatchSpec& spec, std::uint16_t* volume_a, std::uint16_t* volume_b);
/// a += b.
void add_volume(std::uint16_t* a, const std::uint16_t* b, std::size_t count);
/// aggregate() and wta() fused (aggregate_sweep_cpu.cpp; the same results as the two stages composed): the two
/// sweeps meet in the middle and take each row's winner. `volume` is W*H*D scratch.
/// Upper bound of one aggregation thread's row buffers for `spec` (kept per thread across calls).
std::size_t sweep_buffer_bytes(const MatchSpec& spec);
/// Bytes the calling thread's row buffers hold now (for the tests of sweep_buffer_bytes).
std::size_t this_thread_sweep_bytes();
/// With `right_disparity` (left view only) also the right view's integer disparities from the same sums
/// (LrMethod::kVolume; wta_math.hpp's right_key).
void aggregate_wta(const std::uint8_t* cost, const MatchSpec& spec, std::uint16_t* volume, float* disparity,
                   float* confidence, float* right_disparity = nullptr);
/// WTA over A + B (`volume_b` may be null).
void wta(const std::uint16_t* volume_a, const std::uint16_t* volume_b, const MatchSpec& spec, float* disparity,
         float* confidence);
void lr_check(float* left, const float* right, int width, int height, float max_diff);
void median3x3(const float* in, float* out, int width, int height);
/// In place. `scratch` holds >= 2*width*height ints.
void speckle(float* disparity, int width, int height, int max_size, float max_diff, int* scratch);
/// In place: occlusion fill of each row (fill_math.hpp).
void fill_occlusions(float* disparity, int width, int height);
}  // namespace cpu

namespace cuda {
/// Volume pitch (elements per pixel) used on the device: disparities rounded up to the lane layout.
int volume_pitch(int disparities, int lanes = 0);
template <typename T>
void census(ImageView<const T> d_image, CensusSpec spec, std::uint64_t* d_out, StreamHandle stream);
/// Both images of a pair (same size) in one launch: the same codes as two census() calls.
template <typename T>
void census_pair(ImageView<const T> d_left, ImageView<const T> d_right, CensusSpec spec, std::uint64_t* d_out_left,
                 std::uint64_t* d_out_right, StreamHandle stream);
/// Streams of one aggregation: the horizontal paths run on `side`, forked from and joined back into `main`.
struct AggregateStreams {
  StreamHandle main = nullptr;
  StreamHandle side = nullptr;
  EventHandle fork = nullptr;  ///< created with cudaEventDisableTiming (an Event's get())
  EventHandle join = nullptr;
};
/// Sum of the paths = A + B + C (A: vertical/diagonal paths, B: left->right, C: right->left), each
/// width*height*volume_pitch(D) uint16. Queued on streams.main (joined back before return).
void aggregate(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
               std::uint16_t* d_volume_a, std::uint16_t* d_volume_b, std::uint16_t* d_volume_c,
               const AggregateStreams& streams);
/// a += b elementwise (the per-stage API's total volume).
void add_volumes(std::uint16_t* d_a, const std::uint16_t* d_b, std::size_t count, StreamHandle stream);
/// WTA over A + B + C (`d_volume_b`/`d_volume_c` null for a total volume in A). Row pitches in elements;
/// `d_confidence` may be null. `d_right_keys` as wta_per_path()'s (sgm_paths_cuda.cuh).
void wta(const std::uint16_t* d_volume_a, const std::uint16_t* d_volume_b, const std::uint16_t* d_volume_c,
         const MatchSpec& spec, float* d_disparity, std::ptrdiff_t disp_pitch, float* d_confidence,
         std::ptrdiff_t conf_pitch, StreamHandle stream, std::uint32_t* d_right_keys = nullptr);
/// Decodes the folded right keys (width * height, pitch == width) into the right view's disparities, in place
/// (wta_math.hpp's right_view_disparity).
void right_disparity_from_keys(std::uint32_t* d_keys_then_disparity, const MatchSpec& spec, StreamHandle stream);
void lr_check(float* d_left, std::ptrdiff_t left_pitch, const float* d_right, int width, int height, float max_diff,
              StreamHandle stream);
void median3x3(const float* d_in, std::ptrdiff_t in_pitch, float* d_out, std::ptrdiff_t out_pitch, int width,
               int height, StreamHandle stream);
/// In place; `d_scratch` holds >= 2*width*height ints.
void speckle(float* d_disparity, std::ptrdiff_t pitch, int width, int height, int max_size, float max_diff,
             int* d_scratch, StreamHandle stream);
/// In place: occlusion fill of each row (fill_math.hpp's rule), one block per row.
void fill_occlusions(float* d_disparity, std::ptrdiff_t pitch, int width, int height, StreamHandle stream);
/// Zeroes confidence where the disparity is invalid (after the post-filters).
void mask_confidence(const float* d_disparity, std::ptrdiff_t disp_pitch, float* d_confidence,
                     std::ptrdiff_t conf_pitch, int width, int height, StreamHandle stream);
}  // namespace cuda

}  // namespace s3d::stereo::detail
