#pragma once
// How much memory matching one image size takes, known before anything is allocated. A batch tool compares
// it with what the machine has at all (physical RAM, the GPU's total memory): a pair that can never fit is
// a property of that pair (a data error), while an allocation that fails because others hold the memory
// now is transient (OutOfMemory, worth retrying elsewhere).
#include <cstddef>

#include "s3d/core/device.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::stereo {

/// Bytes of memory, by where they live.
struct SgmMemory {
  std::size_t host = 0;    ///< host memory, ordinary and pinned (bytes)
  std::size_t device = 0;  ///< GPU memory (bytes); 0 on the CPU
};

/// What SgmEngine(device, params, width, height) allocates, and what its compute() adds while it runs, for
/// `device`'s backend (`cuda:N`: the CUDA engine; anything else: the CPU engine, so resolve `auto` first).
/// CPU: the census codes, the uint8 cost volume and the uint16 volume of partial sums (about 3*W*H*D bytes),
/// the disparity, right-view and speckle buffers, and the row buffers of the two aggregation threads
/// (an upper bound: they are kept per thread and sized by the largest problem that thread has seen).
/// CUDA: device buffers (per-path uint8 volumes, or three uint16 volumes when path costs exceed a byte; the
/// census codes, images and disparity buffers) and the pinned staging of compute(). Allocates nothing and
/// does not validate: call params.validate(width, height) first.
/// @throws DeviceUnavailable for `cuda:N` in a build without CUDA.
SgmMemory sgm_engine_memory(const Device& device, const SgmParams& params, int width, int height);

/// The same for an SgmPipeline of `depth` pairs in flight (sgm_pipeline.hpp): the engine's memory plus, per
/// slot, the packed input pair (16-bit: 4*W*H bytes) and the output planes (4*W*H, twice with confidence),
/// on the host (pinned on a GPU) and, on a GPU, again on the device.
/// @throws DeviceUnavailable as sgm_engine_memory.
SgmMemory sgm_pipeline_memory(const Device& device, const SgmParams& params, int width, int height, int depth);

}  // namespace s3d::stereo
