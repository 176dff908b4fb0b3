// s3d::stereo::SgmPipeline: pipelined results equal SgmEngine::compute bit for bit on a batch of different
// odd-size pairs (8- and 16-bit mixed, confidence on), FIFO order and sequence numbers, the depth limit,
// reuse after drain, argument errors, destruction with pairs in flight. Per-device suites (label gpu).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/sgm_pipeline.hpp"
#include "stereo_test_util.hpp"
#include "test_support.hpp"

namespace s3d::stereo {
namespace {

using test::Image;

class SgmPipelineDevice : public ::testing::TestWithParam<Device> {};

SgmParams batch_params() {
  SgmParams p;
  p.disparities = 64;
  p.confidence = true;  // both outputs travel through the slots
  return p;
}

// Pair k of a batch: different shift and texture per k; pair 3 is 16-bit (12-bit values).
struct Pair {
  Image<std::uint8_t> l8, r8;
  Image<std::uint16_t> l16, r16;
  bool sixteen = false;
};

std::vector<Pair> make_batch(int w, int h, int count) {
  std::vector<Pair> batch(count);
  for (int k = 0; k < count; ++k) {
    Pair& p = batch[k];
    test::shifted_pair(w, h, 3 + 7 * k, 100u + k, p.l8, p.r8);
    if (k == 3) {
      p.sixteen = true;
      p.l16 = {w, h, std::vector<std::uint16_t>(p.l8.pixels.size())};
      p.r16 = p.l16;
      for (std::size_t i = 0; i < p.l8.pixels.size(); ++i) {
        p.l16.pixels[i] = static_cast<std::uint16_t>(p.l8.pixels[i] * 16 + (i % 7));
        p.r16.pixels[i] = static_cast<std::uint16_t>(p.r8.pixels[i] * 16 + (i % 5));
      }
    }
  }
  return batch;
}

std::uint64_t submit(SgmPipeline& pipe, const Pair& p) {
  return p.sixteen ? pipe.submit(p.l16.view(), p.r16.view()) : pipe.submit(p.l8.view(), p.r8.view());
}

SgmResult reference(SgmEngine& engine, const Pair& p) {
  return p.sixteen ? engine.compute(p.l16.view(), p.r16.view()) : engine.compute(p.l8.view(), p.r8.view());
}

void expect_same(const SgmResult& got, const SgmResult& want, int k) {
  std::string where;
  EXPECT_TRUE(test::bit_equal(got.disparity, want.disparity, want.width, &where)) << "pair " << k << ": " << where;
  EXPECT_TRUE(test::bit_equal(got.confidence, want.confidence, want.width, &where))
      << "pair " << k << " confidence: " << where;
}

TEST_P(SgmPipelineDevice, BatchEqualsEngineComputeOddSize) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  // Odd in both dimensions (no multiple of a kernel's tile), and small: the pipeline's slots and order are the
  // subject here, test_stereo covers the kernels at full size (this test runs 18 matches, in the sanitizer build too).
  const int w = 317, h = 239, n = 6;
  const SgmParams params = batch_params();
  const std::vector<Pair> batch = make_batch(w, h, n);
  SgmEngine engine(GetParam(), params, w, h);
  std::vector<SgmResult> want;
  for (const Pair& p : batch) want.push_back(reference(engine, p));
  // The references must differ from each other, or a pipeline returning one pair's result for all would pass.
  ASSERT_NE(want[0].disparity, want[1].disparity);

  for (int depth : {2, 3}) {
    SCOPED_TRACE("depth " + std::to_string(depth));
    SgmPipeline pipe(GetParam(), params, w, h, depth);
    int submitted = 0, retrieved = 0;
    while (retrieved < n) {
      // keep the pipeline full, then take the oldest
      while (submitted < n && !pipe.full()) {
        EXPECT_EQ(submit(pipe, batch[submitted]), std::uint64_t(submitted));
        ++submitted;
      }
      SgmResult got;
      EXPECT_EQ(pipe.retrieve(got), std::uint64_t(retrieved));
      ASSERT_EQ(got.width, w);
      ASSERT_EQ(got.height, h);
      expect_same(got, want[retrieved], retrieved);
      ++retrieved;
    }
    EXPECT_EQ(pipe.in_flight(), 0);
  }
}

TEST_P(SgmPipelineDevice, PitchedInputsAndCallerStorage) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int w = 97, h = 61, pitch = 113;
  SgmParams params;
  params.disparities = 16;
  const std::vector<Pair> batch = make_batch(w, h, 2);
  // the same images inside wider rows
  auto widen = [&](const Image<std::uint8_t>& im) {
    std::vector<std::uint8_t> out(static_cast<std::size_t>(pitch) * h, 7);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) out[y * pitch + x] = im.pixels[y * w + x];
    return out;
  };
  const auto l = widen(batch[1].l8), r = widen(batch[1].r8);
  SgmEngine engine(GetParam(), params, w, h);
  const SgmResult want = reference(engine, batch[1]);
  SgmPipeline pipe(GetParam(), params, w, h);
  pipe.submit(ImageView<const std::uint8_t>{l.data(), w, h, pitch},
              ImageView<const std::uint8_t>{r.data(), w, h, pitch});
  std::vector<float> disparity(static_cast<std::size_t>(w) * h, -1.0f);
  float dummy = -1.0f;  // confidence is off: the pointer must not be written
  EXPECT_EQ(pipe.retrieve(disparity.data(), &dummy), 0u);
  EXPECT_EQ(dummy, -1.0f);
  std::string where;
  EXPECT_TRUE(test::bit_equal(disparity, want.disparity, w, &where)) << where;
}

TEST_P(SgmPipelineDevice, OrderDepthLimitAndSequenceNumbers) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int w = 97, h = 61;
  SgmParams params;
  params.disparities = 16;
  const std::vector<Pair> batch = make_batch(w, h, 5);
  SgmEngine engine(GetParam(), params, w, h);
  SgmPipeline pipe(GetParam(), params, w, h, 3);
  EXPECT_EQ(pipe.depth(), 3);
  EXPECT_EQ(pipe.width(), w);
  EXPECT_EQ(pipe.height(), h);
  EXPECT_THROW(pipe.retrieve(nullptr, nullptr), InvalidArgument);  // nothing in flight
  for (int k = 0; k < 3; ++k) EXPECT_EQ(submit(pipe, batch[k]), std::uint64_t(k));
  EXPECT_TRUE(pipe.full());
  EXPECT_THROW(submit(pipe, batch[3]), InvalidArgument);
  EXPECT_EQ(pipe.in_flight(), 3);
  EXPECT_EQ(pipe.next_sequence(), 3u);
  std::vector<float> disparity(static_cast<std::size_t>(w) * h);
  EXPECT_THROW(pipe.retrieve(nullptr, nullptr), InvalidArgument);  // null output: the pair stays
  EXPECT_EQ(pipe.in_flight(), 3);
  // FIFO, interleaved: 0 out, 3 in, 1 out, 4 in, then 2, 3, 4
  std::vector<int> order;
  auto take = [&] {
    const std::uint64_t seq = pipe.retrieve(disparity.data(), nullptr);
    std::string where;
    EXPECT_TRUE(test::bit_equal(disparity, reference(engine, batch[seq]).disparity, w, &where)) << seq << ": " << where;
    order.push_back(static_cast<int>(seq));
  };
  take();
  EXPECT_EQ(submit(pipe, batch[3]), 3u);
  take();
  EXPECT_EQ(submit(pipe, batch[4]), 4u);
  while (pipe.in_flight() > 0) take();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_P(SgmPipelineDevice, ReuseAfterDrain) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int w = 97, h = 61;
  SgmParams params;
  params.disparities = 16;
  params.confidence = true;
  const std::vector<Pair> batch = make_batch(w, h, 4);
  SgmEngine engine(GetParam(), params, w, h);
  SgmPipeline pipe(GetParam(), params, w, h);
  submit(pipe, batch[0]);
  submit(pipe, batch[1]);
  pipe.drain();
  EXPECT_EQ(pipe.in_flight(), 0);
  EXPECT_FALSE(pipe.full());
  pipe.drain();  // empty: nothing to do
  // the slots of the discarded pairs now hold new pairs; their results must be the new ones
  EXPECT_EQ(submit(pipe, batch[2]), 2u);
  EXPECT_EQ(submit(pipe, batch[3]), 3u);
  for (int k = 2; k < 4; ++k) {
    SgmResult got;
    EXPECT_EQ(pipe.retrieve(got), std::uint64_t(k));
    expect_same(got, reference(engine, batch[k]), k);
  }
}

TEST_P(SgmPipelineDevice, SizeMismatchAndBadArgumentsThrow) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int w = 97, h = 61;
  SgmParams params;
  params.disparities = 16;
  EXPECT_THROW(SgmPipeline(GetParam(), params, w, h, 0), InvalidArgument);
  EXPECT_THROW(SgmPipeline(GetParam(), params, w, h, SgmPipeline::kMaxDepth + 1), InvalidArgument);
  SgmParams bad = params;
  bad.p2 = bad.p1;
  EXPECT_THROW(SgmPipeline(GetParam(), bad, w, h), InvalidArgument);
  EXPECT_THROW(SgmPipeline(GetParam(), params, 10, h), InvalidArgument);  // D wider than the image

  SgmPipeline pipe(GetParam(), params, w, h);
  const auto a = test::random_image<std::uint8_t>(w, h, 1);
  const auto wider = test::random_image<std::uint8_t>(w + 1, h, 2);
  const auto taller = test::random_image<std::uint8_t>(w, h + 1, 3);
  EXPECT_THROW(pipe.submit(a.view(), wider.view()), InvalidArgument);
  EXPECT_THROW(pipe.submit(taller.view(), a.view()), InvalidArgument);
  EXPECT_THROW(pipe.submit(wider.view(), wider.view()), InvalidArgument);
  EXPECT_THROW(pipe.submit(ImageView<const std::uint8_t>{nullptr, w, h, w}, a.view()), InvalidArgument);
  EXPECT_THROW(pipe.submit(ImageView<const std::uint8_t>{a.pixels.data(), w, h, w - 1}, a.view()), InvalidArgument);
  EXPECT_EQ(pipe.in_flight(), 0);  // nothing was queued
  EXPECT_EQ(pipe.next_sequence(), 0u);
  EXPECT_EQ(pipe.submit(a.view(), a.view()), 0u);  // still usable
  SgmResult r;
  EXPECT_EQ(pipe.retrieve(r), 0u);
  EXPECT_TRUE(r.confidence.empty());
}

TEST_P(SgmPipelineDevice, DestroyedWithPairsInFlight) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int w = 631, h = 479;
  const std::vector<Pair> batch = make_batch(w, h, 3);
  {
    SgmPipeline pipe(GetParam(), batch_params(), w, h, 3);
    for (const Pair& p : batch) submit(pipe, p);
    EXPECT_EQ(pipe.in_flight(), 3);
  }  // waits for the three pairs, frees everything (the test main checks device allocations)
  // moved-to pipelines keep their pairs
  SgmPipeline a(GetParam(), batch_params(), w, h);
  submit(a, batch[0]);
  SgmPipeline b = std::move(a);
  EXPECT_EQ(b.in_flight(), 1);
  SgmResult got;
  EXPECT_EQ(b.retrieve(got), 0u);
  SgmEngine engine(GetParam(), batch_params(), w, h);
  expect_same(got, reference(engine, batch[0]), 0);
}

INSTANTIATE_TEST_SUITE_P(Devices, SgmPipelineDevice, ::testing::ValuesIn(test::test_devices()), test::device_test_name);

}  // namespace
}  // namespace s3d::stereo
