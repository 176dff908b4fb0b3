// StagingPipeline with a trivial op (the output is a copy of the input: a device-to-device copy on CUDA, a
// memcpy on the CPU), per device: the ring's bookkeeping, the FIFO order, slot reuse and the refusals.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/staging_pipeline.hpp"
#include "test_support.hpp"

namespace s3d {
namespace {

constexpr int kDeviceToDevice = 3;  // detail::copy_bytes_async kind (cudaMemcpyKind)

class StagingPipelineTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    S3D_SKIP_IF_NO_DEVICE(GetParam());
    if (GetParam().is_cuda()) resolve_device(GetParam());
  }

  // The item `value`: `count` ints counting up from value * 1000, so every item and every element differ.
  static std::vector<int> item(int value, std::size_t count) {
    std::vector<int> v(count);
    std::iota(v.begin(), v.end(), value * 1000);
    return v;
  }

  static std::uint64_t submit_copy(StagingPipeline& pipe, const std::vector<int>& input) {
    const std::size_t bytes = input.size() * sizeof(int);
    return pipe.submit(
        StagingBytes{bytes, bytes}, [&](const StagingSlot& s) { std::memcpy(s.host_in, input.data(), bytes); },
        [&](const StagingSlot& s, StreamHandle stream) {
          if (stream) {
            detail::copy_bytes_async(s.device_out, s.device_in, bytes, kDeviceToDevice, stream);
          } else {
            std::memcpy(s.device_out, s.device_in, bytes);
          }
        });
  }

  static std::vector<int> retrieve_copy(StagingPipeline& pipe, std::size_t count, std::uint64_t* sequence) {
    std::vector<int> out(count);
    *sequence = pipe.retrieve([&](const StagingSlot& s) { std::memcpy(out.data(), s.host_out, count * sizeof(int)); });
    return out;
  }
};

TEST_P(StagingPipelineTest, ReturnsEveryItemInSubmissionOrderThroughReusedSlots) {
  constexpr std::size_t kCount = 4099;  // not a multiple of anything the copies might round to
  constexpr int kDepth = 3;
  StagingPipeline pipe(GetParam(), kDepth, StagingBytes{kCount * sizeof(int), kCount * sizeof(int)});
  EXPECT_EQ(pipe.depth(), kDepth);
  EXPECT_EQ(pipe.compute_stream() != nullptr, GetParam().is_cuda());
  int submitted = 0, retrieved = 0;
  // Fill to the depth, then alternate, then empty: 10 items through 3 slots, each slot reused.
  while (retrieved < 10) {
    if (submitted < 10 && !pipe.full()) {
      EXPECT_EQ(submit_copy(pipe, item(submitted, kCount)), static_cast<std::uint64_t>(submitted));
      ++submitted;
      continue;
    }
    std::uint64_t sequence = 0;
    const std::vector<int> got = retrieve_copy(pipe, kCount, &sequence);
    EXPECT_EQ(sequence, static_cast<std::uint64_t>(retrieved));
    ASSERT_EQ(got, item(retrieved, kCount)) << "item " << retrieved;
    ++retrieved;
    EXPECT_EQ(pipe.in_flight(), submitted - retrieved);
  }
  EXPECT_EQ(pipe.next_sequence(), 10u);
}

TEST_P(StagingPipelineTest, RefusesWhenFullOrEmptyOrOversizedAndStaysUsable) {
  StagingPipeline pipe(GetParam(), 2, StagingBytes{64, 64});
  std::uint64_t sequence = 0;
  EXPECT_THROW(retrieve_copy(pipe, 1, &sequence), InvalidArgument);
  EXPECT_THROW(submit_copy(pipe, item(0, 17)), InvalidArgument);  // 68 bytes > 64
  EXPECT_EQ(pipe.in_flight(), 0);
  EXPECT_EQ(pipe.next_sequence(), 0u);
  submit_copy(pipe, item(1, 16));
  submit_copy(pipe, item(2, 16));
  EXPECT_TRUE(pipe.full());
  EXPECT_THROW(submit_copy(pipe, item(3, 16)), InvalidArgument);
  EXPECT_EQ(retrieve_copy(pipe, 16, &sequence), item(1, 16));
  EXPECT_EQ(sequence, 0u);
  EXPECT_EQ(retrieve_copy(pipe, 16, &sequence), item(2, 16));
  EXPECT_EQ(sequence, 1u);
}

TEST_P(StagingPipelineTest, AFailingCallbackLeavesTheSlotFreeAndTheSequenceUnused) {
  StagingPipeline pipe(GetParam(), 2, StagingBytes{64, 64});
  auto no_compute = [](const StagingSlot&, StreamHandle) {};
  EXPECT_THROW(pipe.submit(
                   StagingBytes{4, 4}, [](const StagingSlot&) { throw std::runtime_error("pack"); }, no_compute),
               std::runtime_error);
  EXPECT_THROW(pipe.submit(
                   StagingBytes{4, 4}, [](const StagingSlot&) {},
                   [](const StagingSlot&, StreamHandle) { throw std::runtime_error("compute"); }),
               std::runtime_error);
  EXPECT_EQ(pipe.in_flight(), 0);
  EXPECT_EQ(submit_copy(pipe, item(5, 16)), 0u);
  std::uint64_t sequence = 1;
  EXPECT_EQ(retrieve_copy(pipe, 16, &sequence), item(5, 16));
  EXPECT_EQ(sequence, 0u);
}

TEST_P(StagingPipelineTest, DrainDiscardsTheItemsInFlightAndKeepsCounting) {
  StagingPipeline pipe(GetParam(), 4, StagingBytes{64, 64});
  for (int i = 0; i < 3; ++i) submit_copy(pipe, item(i, 16));
  pipe.drain();
  EXPECT_EQ(pipe.in_flight(), 0);
  EXPECT_EQ(submit_copy(pipe, item(7, 16)), 3u);
  std::uint64_t sequence = 0;
  EXPECT_EQ(retrieve_copy(pipe, 16, &sequence), item(7, 16));
  EXPECT_EQ(sequence, 3u);
}

// That the destructor waits for an item in flight is checked with delayed device work in
// core_cuda_test.cpp.
TEST_P(StagingPipelineTest, MovingCarriesTheItemsInFlight) {
  StagingPipeline pipe(GetParam(), 2, StagingBytes{64, 64});
  submit_copy(pipe, item(4, 16));
  StagingPipeline moved(std::move(pipe));
  EXPECT_EQ(moved.in_flight(), 1);
  std::uint64_t sequence = 1;
  EXPECT_EQ(retrieve_copy(moved, 16, &sequence), item(4, 16));
  EXPECT_EQ(sequence, 0u);
  submit_copy(moved, item(6, 16));  // still in flight when `moved` is destroyed
}

TEST_P(StagingPipelineTest, RefusesABadDepthOrAnUnresolvedDevice) {
  EXPECT_THROW(StagingPipeline(GetParam(), 0, StagingBytes{}), InvalidArgument);
  EXPECT_THROW(StagingPipeline(GetParam(), StagingPipeline::kMaxDepth + 1, StagingBytes{}), InvalidArgument);
  EXPECT_THROW(StagingPipeline(Device(Device::Kind::kAuto), 1, StagingBytes{}), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Devices, StagingPipelineTest, ::testing::ValuesIn(test::test_devices()),
                         test::device_test_name);

}  // namespace
}  // namespace s3d
