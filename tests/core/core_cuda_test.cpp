// The core on CUDA only (built when CUDA is): what needs the runtime directly, for device work the test
// controls (a host function on a stream) or an error the test provokes.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "s3d/core/cuda_check.cuh"
#include "s3d/core/errors.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/staging_pipeline.hpp"
#include "s3d/core/stream.hpp"

namespace s3d {
namespace {

// Runs on the compute stream, long after submit() returned: only a destructor that waits sees it done.
void CUDART_CB sleep_then_set(void* flag) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  static_cast<std::atomic<bool>*>(flag)->store(true);
}

// Holds its stream until the test opens the gate, so "not ready" does not depend on timing.
void CUDART_CB wait_for_gate(void* gate) {
  while (!static_cast<std::atomic<bool>*>(gate)->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(EventCuda, ReadyNeitherLeavesNotReadyBehindNorClearsAnEarlierError) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  resolve_device(Device::parse("cuda"));
  const Stream stream;
  Event event;
  std::atomic<bool> gate{false};
  S3D_CUDA_CHECK(cudaLaunchHostFunc(stream, wait_for_gate, &gate));
  event.record(stream);
  EXPECT_FALSE(event.ready());
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  EXPECT_NE(cudaSetDevice(cuda_device_count() + 5), cudaSuccess);  // a pending, non-sticky error
  EXPECT_FALSE(event.ready());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  gate.store(true);
  event.synchronize();
  EXPECT_TRUE(event.ready());
}

TEST(StagingPipelineCuda, DestroyingWaitsForTheItemsInFlight) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Device device = resolve_device(Device::parse("cuda"));
  std::atomic<bool> done{false};
  {
    StagingPipeline pipe(device, 2, StagingBytes{64, 64});
    pipe.submit(
        StagingBytes{64, 64}, [](const StagingSlot&) {},
        [&](const StagingSlot&, StreamHandle stream) {
          S3D_CUDA_CHECK(cudaLaunchHostFunc(stream, sleep_then_set, &done));
        });
  }
  EXPECT_TRUE(done.load());
}

TEST(StagingPipelineCuda, TakesAComputeStreamOfItsDeviceOnly) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Device device = resolve_device(Device::parse("cuda"));
  const Stream own;
  EXPECT_EQ(stream_device(own), 0);
  StagingPipeline pipe(device, 1, StagingBytes{4, 4}, own);
  EXPECT_EQ(pipe.compute_stream(), own.get());
  if (cuda_device_count() < 2) return;  // a stream of another device needs a second GPU
  std::optional<Stream> other;
  {
    const ScopedDevice on_second(1);
    other.emplace();
  }
  EXPECT_EQ(stream_device(*other), 1);
  EXPECT_THROW(StagingPipeline(device, 1, StagingBytes{4, 4}, *other), InvalidArgument);
}

}  // namespace
}  // namespace s3d
