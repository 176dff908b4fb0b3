// CudaGraph::capture: work that cannot be captured gives false (the caller runs it eagerly), work that fails
// for another reason rethrows without leaving the stream in capture mode or an error pending, and a captured
// graph replays the queued work.
#include <gtest/gtest.h>

#include <stdexcept>

#include "s3d/core/cuda_graph.cuh"
#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/stream.hpp"

namespace s3d {
namespace {

__global__ void add_one_kernel(int* value) { *value += 1; }

bool capturing(StreamHandle stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  S3D_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

int read_value(const DeviceBuffer<int>& value, StreamHandle stream) {
  int host = -1;
  value.copy_to_host_async(&host, 1, stream);
  synchronize(stream);
  return host;
}

TEST(CudaGraph, CapturedWorkReplays) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Stream stream;
  DeviceBuffer<int> value(1, stream);
  value.fill_zero_async(stream);
  CudaGraph graph;
  ASSERT_TRUE(graph.capture(stream, [&] { add_one_kernel<<<1, 1, 0, stream>>>(value.data()); }));
  EXPECT_EQ(read_value(value, stream), 0);  // capturing runs nothing
  graph.launch(stream);
  graph.launch(stream);
  EXPECT_EQ(read_value(value, stream), 2);
}

TEST(CudaGraph, UncapturableWorkReturnsFalse) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Stream stream;
  CudaGraph graph;
  EXPECT_FALSE(graph.capture(stream, [&] { S3D_CUDA_CHECK(cudaStreamSynchronize(stream)); }));
  EXPECT_TRUE(graph.empty());
  EXPECT_FALSE(capturing(stream));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaGraph, OtherFailuresRethrowAndLeaveTheStreamUsable) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Stream stream;
  DeviceBuffer<int> value(1, stream);
  value.fill_zero_async(stream);
  CudaGraph graph;
  EXPECT_THROW(graph.capture(stream,
                             [&] {
                               add_one_kernel<<<1, 1, 0, stream>>>(value.data());
                               throw InvalidArgument("not a capture problem");
                             }),
               InvalidArgument);
  EXPECT_TRUE(graph.empty());
  EXPECT_FALSE(capturing(stream));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(read_value(value, stream), 0);  // the discarded capture ran nothing
  ASSERT_TRUE(graph.capture(stream, [&] { add_one_kernel<<<1, 1, 0, stream>>>(value.data()); }));
  graph.launch(stream);
  EXPECT_EQ(read_value(value, stream), 1);
}

}  // namespace
}  // namespace s3d
