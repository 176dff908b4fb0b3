// build_chain (rulebook.hpp): a network's rulebooks, each layer on the previous layer's output.
#include <chrono>
#include <map>

#include "s3d/core/errors.hpp"
#include "s3d/points/rulebook.hpp"

namespace s3d::points {

std::vector<LayerRulebook> build_chain(RulebookEngine& engine, const SparseCoords& coords,
                                       const std::vector<RulebookLayer>& layers) {
  using Clock = std::chrono::steady_clock;
  std::vector<LayerRulebook> out;
  std::vector<SparseCoords> inputs;  // each layer's input (inverse_of needs its forward's)
  std::map<std::string, std::size_t> by_name;
  SparseCoords cur = coords;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const RulebookLayer& layer = layers[i];
    const auto forward = by_name.find(layer.inverse_of);
    S3D_EXPECTS(layer.inverse_of.empty() || forward != by_name.end(),
                "build_chain: layer " + layer.name + ": inverse_of names no earlier layer (" + layer.inverse_of + ")");
    const std::string where = layer.name.empty() ? "" : "layer " + layer.name + ": ";
    LayerRulebook r;
    r.name = layer.name;
    r.spec = layer.spec;
    r.inverse = layer.inverse || !layer.inverse_of.empty();
    try {
      const auto t0 = Clock::now();
      if (!layer.inverse_of.empty()) {
        const LayerRulebook& f = out[forward->second];
        if (f.rb.out.coords != cur.coords || f.rb.out.shape != cur.shape)
          throw DataError("the input is not layer " + layer.inverse_of + "'s output (an inverse layer undoes a " +
                          "layer whose outputs reach it unchanged, through submanifold layers only)");
        r.spec = f.spec;
        r.rb = engine.inverse(f.rb, inputs[forward->second]);
      } else if (layer.inverse) {
        const Rulebook f = engine.build(cur, layer.spec);
        r.rb = engine.inverse(f, cur);
      } else {
        r.rb = engine.build(cur, layer.spec);
      }
      r.milliseconds = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    } catch (const InvalidArgument& e) {  // the engine's checks of the coordinates: the data's fault here
      throw DataError(where + e.what());
    } catch (const DataError& e) {
      throw DataError(where + e.what());
    }
    inputs.push_back(cur);
    cur = r.rb.out;
    by_name[layer.name] = i;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace s3d::points
