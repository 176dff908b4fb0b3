// build_chain: a network's rulebooks, each layer on the previous layer's output (CPU; the engine's own
// CPU == CUDA suites are in rulebook_test.cpp). The reference is the engine called layer by layer here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/points/rulebook.hpp"

namespace s3d::points {
namespace {

SparseCoords grid_coords() {
  SparseCoords c;
  c.shape = {6, 7, 5};
  for (int z = 0; z < 6; ++z)
    for (int y = 0; y < 7; ++y)
      for (int x = 0; x < 5; ++x)
        if ((x * 3 + y * 5 + z * 7) % 4 == 0) c.coords.insert(c.coords.end(), {0, z, y, x});
  return c;
}

ConvSpec subm3() {
  ConvSpec s;
  s.subm = true;
  s.padding = {1, 1, 1};
  return s;
}

ConvSpec down2() {
  ConvSpec s;
  s.kernel = {2, 2, 2};
  s.stride = {2, 2, 2};
  return s;
}

void expect_same(const Rulebook& a, const Rulebook& b) {
  EXPECT_EQ(a.out.coords, b.out.coords);
  EXPECT_EQ(a.out.shape, b.out.shape);
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.in_index, b.in_index);
  EXPECT_EQ(a.out_index, b.out_index);
}

TEST(BuildChain, EachLayerOnThePreviousOutputAndInversesOfEarlierLayers) {
  RulebookEngine engine(Device::parse("cpu"));
  const SparseCoords in = grid_coords();
  const std::vector<RulebookLayer> layers{{"a", subm3(), false, ""},
                                          {"b", down2(), false, ""},
                                          {"c", subm3(), false, ""},
                                          {"d", ConvSpec{}, false, "b"},
                                          {"e", down2(), true, ""}};
  const std::vector<LayerRulebook> chain = build_chain(engine, in, layers);
  ASSERT_EQ(chain.size(), 5u);
  const Rulebook a = engine.build(in, subm3());
  const Rulebook b = engine.build(a.out, down2());
  const Rulebook c = engine.build(b.out, subm3());
  const Rulebook d = engine.inverse(b, a.out);
  const Rulebook e = engine.inverse(engine.build(d.out, down2()), d.out);
  expect_same(chain[0].rb, a);
  expect_same(chain[1].rb, b);
  expect_same(chain[2].rb, c);
  expect_same(chain[3].rb, d);
  expect_same(chain[4].rb, e);
  EXPECT_EQ(chain[3].rb.out.coords, in.coords);     // the transposed convolution returns to b's input
  EXPECT_EQ(chain[3].spec.kernel, down2().kernel);  // an inverse_of layer reports its forward's geometry
  EXPECT_FALSE(chain[2].inverse);
  EXPECT_TRUE(chain[3].inverse);
  EXPECT_TRUE(chain[4].inverse);
  EXPECT_EQ(chain[1].name, "b");
}

TEST(BuildChain, DataErrorsNameTheLayer) {
  RulebookEngine engine(Device::parse("cpu"));
  const SparseCoords in = grid_coords();
  // b's output does not reach d unchanged: c downsamples it again.
  const std::vector<RulebookLayer> broken{{"b", down2(), false, ""}, {"c", down2(), false, ""}, {"d", {}, false, "b"}};
  try {
    build_chain(engine, in, broken);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("layer d: the input is not layer b's output", 0), 0u) << e.what();
  }
  SparseCoords outside = in;
  outside.coords[3] = 5;  // x = 5 in a grid 5 wide
  try {
    build_chain(engine, outside, {{"", subm3(), false, ""}});
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).find("layer"), std::string::npos) << e.what();  // one unnamed layer: no prefix
  }
  EXPECT_THROW(build_chain(engine, outside, {{"first", subm3(), false, ""}}), DataError);
  EXPECT_THROW(build_chain(engine, in, {{"d", {}, false, "nowhere"}}), InvalidArgument);
  EXPECT_TRUE(build_chain(engine, in, {}).empty());
}

}  // namespace
}  // namespace s3d::points
