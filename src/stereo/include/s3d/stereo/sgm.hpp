#pragma once
// Semi-global matching (Hirschmüller, PAMI 2008) on census costs, CPU and CUDA, bit-identical.
//
// Pipeline (one file per stage under src/stereo/src, CPU `*_cpu.cpp` and CUDA `*_cuda.cu`):
//   census -> aggregate (4 or 8 paths; Hamming costs of the census codes: a uint8 volume on the CPU,
//   computed on the fly on the GPU; sums in uint16, see kMaxAggregatedCost) -> wta
//   (winner-take-all + uniqueness + parabola subpixel + confidence) -> lr_check (the right view's
//   disparities from the left view's aggregated costs, or a second, full SGM run with the RIGHT image as
//   reference: SgmParams::lr_method) -> median (3x3) -> speckle
//   -> occlusion fill of the invalid runs that a depth step explains (SgmParams::fill, on by default).
//
// Input: rectified grey images, 8-bit or 16-bit, left and right of the same size. Colour images are
// converted to grey by the caller (expected: ITU-R BT.601 luma, as OpenCV's COLOR_BGR2GRAY; the census
// only compares pixels, so any monotonic grey scale gives the same result). Every pixel value is data:
// black (0) pixels are matched like any other, nothing is masked silently. Pixels outside the image
// (census window at the border) replicate the border.
//
// Output: disparity as float, in pixels (scale 1; subpixel values are fractional pixels, never the
// 16x fixed point of OpenCV), left view, d = x_left - x_right. Invalid pixels hold kInvalidDisparity
// (+infinity): rejected by uniqueness, left-right check, speckle filter, or whose winning match lies
// outside the right image (e.g. the leftmost columns when min_disparity > x). Matching costs of targets
// outside the image are the maximum (census bits), so border columns use the range that exists.
// With SgmParams::fill the invalid runs that an occlusion explains are then filled with the background
// neighbour; other invalid pixels stay invalid. Optional confidence in [0, 1] (0 where invalid, and where filled).
//
// Determinism: all costs are integers; the only float math (subpixel, confidence, median, comparisons)
// lives in S3D_HOST_DEVICE headers compiled without FMA contraction, so the CPU and CUDA backends return
// bit-identical disparities and confidences, stage by stage and end to end.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/image.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/core/views.hpp"

namespace s3d::stereo {

/// Marks an invalid disparity (and the value the I/O layer turns into PFM inf / KITTI 0).
inline constexpr float kInvalidDisparity = ::s3d::kInvalid;

/// True for a valid disparity: finite, as s3d::is_valid (kInvalidDisparity, NaN and -inf are invalid).
inline bool is_valid_disparity(float d) { return ::s3d::is_valid(d); }

/// Census comparison pattern.
enum class CensusKind {
  kFull,             ///< every window pixel against the centre: w*h-1 bits (62 for 9x7); bit = (pixel < centre)
  kCenterSymmetric,  ///< each pixel against its mirror through the centre: (w*h-1)/2 bits (31 for 9x7)
};

/// Parses "9x7", "cs9x7", "WxH" or "csWxH" (odd W <= 9, odd H <= 7) into `kind`, `width`, `height`.
/// @throws InvalidArgument naming the bad text.
void parse_census(const std::string& text, CensusKind& kind, int& width, int& height);

/// How the left-right check finds the right view's disparities.
enum class LrMethod {
  /// From the left view's aggregated costs S: d_R(x) = argmin_d S(x + d, d), the lowest d among equal
  /// sums, integer (Hirschmüller 2008, section 3.4; as libSGM and OpenCV's StereoSGBM); none within half a
  /// census window of the right image's left edge. Costs no second aggregation.
  kVolume,
  /// A second, full SGM run with the right image as reference (its own paths, subpixel and uniqueness):
  /// a true right-view match, about twice the work.
  kRightSgm,
};

/// Parses "volume" or "right-sgm". @throws InvalidArgument naming the bad text.
LrMethod parse_lr_method(const std::string& text);
/// "volume" or "right-sgm".
const char* lr_method_name(LrMethod method);

/// All parameters of the matcher. Every field has a unit and a default; `validate()` says which is wrong.
/// The defaults (census 9x7, 8 paths, P1 24, P2 80, no uniqueness test, LR check 2 px, subpixel, median,
/// speckle 100 / 2 px, occlusion fill) were chosen on the real scenes beside OpenCV StereoSGBM; how, and
/// what they score, is in docs/ACCURACY.md.
struct SgmParams {
  int disparities = 128;  ///< D: number of disparities searched, [min_disparity, min_disparity + D). 16..1024
  int min_disparity = 0;  ///< smallest disparity searched (pixels); negative allowed
  int paths = 8;          ///< aggregation directions: 4 (horizontal + vertical) or 8 (+ diagonals)
  int p1 = 24;            ///< penalty for a disparity change of 1 between neighbours (cost units = census bits)
  int p2 = 80;            ///< penalty for larger changes; must be > p1
  CensusKind census = CensusKind::kFull;  ///< census pattern
  int census_width = 9;                   ///< census window width (odd, 1..9)
  int census_height = 7;                  ///< census window height (odd, 1..7)
  /// Uniqueness margin in percent, OpenCV's uniquenessRatio: a pixel is invalid when some cost S(d) with
  /// |d - best| > 1 satisfies S(d) * (100 - uniqueness) < S(best) * 100. 0 disables (the default: it rejects
  /// correct matches in weak texture; 8 gives fewer wrong estimates, a sparser map). 0..99.
  int uniqueness = 0;
  bool subpixel = true;  ///< parabola fit through S(best-1), S(best), S(best+1); output stays in pixels
  bool lr_check = true;  ///< left-right consistency (the right view's disparities: lr_method)
  LrMethod lr_method = LrMethod::kRightSgm;  ///< how the LR check finds the right view's disparities
  float lr_max_diff = 2.0f;    ///< LR tolerance (pixels): invalid when |d_left - d_right(x - d_left)| > this
  bool median = true;          ///< 3x3 median over valid neighbours (invalid pixels stay invalid)
  int speckle_size = 100;      ///< regions of <= this many pixels are invalidated (OpenCV filterSpeckles); 0 disables
  float speckle_range = 2.0f;  ///< max disparity difference (pixels) between 4-neighbours of one region
  bool confidence = false;     ///< also output a confidence map: (S2 - S1) / S2, best vs second-best outside +-1
  /// Occlusion fill, the last stage (after LR check, median, speckle and the confidence mask): in each row,
  /// a run of invalid pixels with valid neighbours l and r on both sides, no wider than |l - r| + 2 px, takes
  /// the smaller (farther) of l and r. In a rectified pair the background that a nearer surface hides from
  /// the right view is a run beside the depth step as wide as the step, so such runs are occlusions and take
  /// the background (Hirschmüller 2008); wider runs (mismatches, textureless areas, speckles) and runs at a
  /// row's start or end (no background to take: the left band outside the right image's range) stay
  /// invalid. It trades a few wrong estimates for many more correct ones (docs/ACCURACY.md). The confidence
  /// is not filled: filled pixels keep confidence 0 (the value of an invalid pixel). On by default.
  bool fill = true;

  /// Checks every field on its own. @throws InvalidArgument naming the field (e.g. "p2 (10) must be > p1 (10)").
  void validate() const;
  /// Also checks against an image size (D and the range against the width, the window against the size).
  /// @throws InvalidArgument naming the field.
  void validate(int width, int height) const;

  /// Bits in one census code (the largest matching cost): w*h-1 or (w*h-1)/2.
  int census_bits() const;
};

/// Aggregated costs are stored as uint16 per (pixel, disparity), the sum over paths of L_r; each L_r is
/// bounded by census_bits + p2, so validate() demands paths * (census_bits + p2) <= 65535.
inline constexpr int kMaxAggregatedCost = 65535;

struct SgmMemory;  // s3d/stereo/sgm_memory.hpp

/// Disparity (and optional confidence) of one pair. Row-major, pitch == width.
struct SgmResult {
  int width = 0;
  int height = 0;
  std::vector<float> disparity;   ///< width*height; kInvalidDisparity where invalid
  std::vector<float> confidence;  ///< width*height when params.confidence, else empty
  ImageView<const float> disparity_view() const { return {disparity.data(), width, height, width}; }
};

/// A matcher for one device, one parameter set and one image size. It allocates everything once in its
/// constructor (CUDA: device buffers, pinned host staging, its own streams) and reuses the buffers for
/// every pair. Not thread-safe: use one engine per thread. Memory: CPU ~ 3*W*H*D bytes (uint8 costs, one
/// uint16 volume of partial sums) plus ~2.5 MB of row buffers per thread (W 1242, D 128); CUDA
/// ~ (paths + 1)*W*H*P bytes (the uint8 matching costs and one uint8 volume per path direction, P = D
/// rounded up to 16 * 2^k, e.g. 128 for D = 100; 6*W*H*P, three uint16 volumes, when census bits + P2 > 255)
/// plus a few W*H buffers. compute() is synchronous per pair; SgmPipeline (sgm_pipeline.hpp) overlaps the
/// upload of the next pair with the current one, and compute_device() lets a caller pipeline with its own
/// streams.
class SgmEngine {
 public:
  /// @param device  `cpu` or `cuda:N` (`auto` is resolved here). The calling thread's current CUDA device
  ///                is the same after every call of the engine (construction and destruction included).
  /// @throws InvalidArgument (params.validate(width, height)), DeviceUnavailable, OutOfMemory, CudaError.
  SgmEngine(const Device& device, const SgmParams& params, int width, int height);
  ~SgmEngine();
  SgmEngine(SgmEngine&&) noexcept;
  SgmEngine& operator=(SgmEngine&&) noexcept;
  SgmEngine(const SgmEngine&) = delete;
  SgmEngine& operator=(const SgmEngine&) = delete;

  /// Matches one pair of host images (any pitch). Synchronous: the result is complete on return.
  /// @throws InvalidArgument when a size differs from the engine's, CudaError on a device failure.
  SgmResult compute(ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right);
  SgmResult compute(ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right);

  /// Same, writing into caller storage (width*height floats each; `confidence` may be null). Lets a batch
  /// loop reuse its host buffers too.
  void compute(ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right, float* disparity,
               float* confidence);
  void compute(ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right, float* disparity,
               float* confidence);

  /// Device-resident entry (CUDA engines only): inputs and outputs in device memory, pitch in elements.
  /// Queues the work on `stream` (nullptr = the engine's own stream) and returns without synchronizing.
  /// `d_confidence` may have a null data pointer. @throws InvalidArgument on a CPU engine or a size mismatch.
  void compute_device(ImageView<const std::uint8_t> d_left, ImageView<const std::uint8_t> d_right,
                      ImageView<float> d_disparity, ImageView<float> d_confidence, StreamHandle stream = nullptr);
  void compute_device(ImageView<const std::uint16_t> d_left, ImageView<const std::uint16_t> d_right,
                      ImageView<float> d_disparity, ImageView<float> d_confidence, StreamHandle stream = nullptr);

  /// The engine's CUDA stream (nullptr on the CPU).
  StreamHandle stream() const;
  const SgmParams& params() const;
  const Device& device() const;
  int width() const;
  int height() const;
  /// Bytes held by the engine's own buffers (sgm_memory.hpp; without the CPU aggregation's per-thread rows).
  SgmMemory allocated() const;

  class Impl;  ///< backend implementation (CPU or CUDA)

 private:
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: builds an engine and matches one pair. Prefer SgmEngine for batches.
SgmResult compute_sgm(const Device& device, const SgmParams& params, ImageView<const std::uint8_t> left,
                      ImageView<const std::uint8_t> right);
SgmResult compute_sgm(const Device& device, const SgmParams& params, ImageView<const std::uint16_t> left,
                      ImageView<const std::uint16_t> right);

}  // namespace s3d::stereo
