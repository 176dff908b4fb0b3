// s3d.sgm and s3d.SgmEngine: s3d::stereo's semi-global matcher on grey image arrays.
#include <nanobind/stl/string.h>

#include <memory>
#include <tuple>
#include <type_traits>

#include "arrays.hpp"
#include "engines.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::python {
namespace {

using namespace nb::literals;

/// SgmParams from keyword arguments named as its fields (census as "9x7" / "cs9x7"). @throws TypeError for
/// an unknown name; the library's validate() checks the values.
template <typename T>
T keyword(const std::string& name, nb::handle value, const char* expected) {
  T out{};
  // No float for an int, no None for a bool; an int is a fine float.
  if (!nb::try_cast<T>(value, out, /*convert=*/std::is_same_v<T, float>)) {
    throw nb::type_error(
        ("sgm: " + name + ": expected " + expected + ", got " + nb::type_name(value.type()).c_str()).c_str());
  }
  return out;
}

stereo::SgmParams sgm_params(const nb::kwargs& kwargs) {
  stereo::SgmParams p;
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    if (name == "disparities")
      p.disparities = keyword<int>(name, value, "int");
    else if (name == "min_disparity")
      p.min_disparity = keyword<int>(name, value, "int");
    else if (name == "paths")
      p.paths = keyword<int>(name, value, "int");
    else if (name == "p1")
      p.p1 = keyword<int>(name, value, "int");
    else if (name == "p2")
      p.p2 = keyword<int>(name, value, "int");
    else if (name == "census")
      stereo::parse_census(keyword<std::string>(name, value, "str"), p.census, p.census_width, p.census_height);
    else if (name == "uniqueness")
      p.uniqueness = keyword<int>(name, value, "int");
    else if (name == "subpixel")
      p.subpixel = keyword<bool>(name, value, "bool");
    else if (name == "lr_check")
      p.lr_check = keyword<bool>(name, value, "bool");
    else if (name == "lr_max_diff")
      p.lr_max_diff = keyword<float>(name, value, "float");
    else if (name == "lr_method")
      p.lr_method = stereo::parse_lr_method(keyword<std::string>(name, value, "str"));
    else if (name == "median")
      p.median = keyword<bool>(name, value, "bool");
    else if (name == "speckle_size")
      p.speckle_size = keyword<int>(name, value, "int");
    else if (name == "speckle_range")
      p.speckle_range = keyword<float>(name, value, "float");
    else if (name == "fill")
      p.fill = keyword<bool>(name, value, "bool");
    else if (name == "confidence")
      p.confidence = keyword<bool>(name, value, "bool");
    else
      throw nb::type_error(("sgm: unexpected keyword argument '" + name + "'").c_str());
  }
  return p;
}

bool same_params(const stereo::SgmParams& a, const stereo::SgmParams& b) {
  return std::tie(a.disparities, a.min_disparity, a.paths, a.p1, a.p2, a.census, a.census_width, a.census_height,
                  a.uniqueness, a.subpixel, a.lr_check, a.lr_method, a.lr_max_diff, a.median, a.speckle_size,
                  a.speckle_range, a.fill, a.confidence) ==
         std::tie(b.disparities, b.min_disparity, b.paths, b.p1, b.p2, b.census, b.census_width, b.census_height,
                  b.uniqueness, b.subpixel, b.lr_check, b.lr_method, b.lr_max_diff, b.median, b.speckle_size,
                  b.speckle_range, b.fill, b.confidence);
}

/// One pair through `engine`: disparity float32 [H, W] (+inf invalid), and the confidence when the engine's
/// params ask for it.
nb::object match(stereo::SgmEngine& engine, const Input& left, const Input& right, nb::handle stream_obj) {
  const int w = engine.width(), h = engine.height();
  const bool wide = dtype_of(left) == DType::kUint16;
  const bool with_confidence = engine.params().confidence;
  const Framework framework = framework_of(left.object);
  StreamHandle stream = resolve_stream(stream_obj, left);
  // SgmEngine::compute_device reads a null stream as "the engine's own stream", which the caller's legacy default
  // stream would not wait for: name the legacy stream by its own handle instead (cudaStreamLegacy, CUDA Runtime
  // API, "Stream synchronization behavior").
  if (left.device.is_cuda() && stream == nullptr) stream = reinterpret_cast<StreamHandle>(std::uintptr_t{1});
  Output disparity = allocate(DType::kFloat32, {h, w}, left.device, stream);
  Output confidence;
  if (with_confidence) confidence = allocate(DType::kFloat32, {h, w}, left.device, stream);
  {
    nb::gil_scoped_release release;
    if (left.device.is_cuda()) {
      before_call(&engine, left.device, stream);
      ImageView<float> d{disparity.as<float>(), w, h, w};
      ImageView<float> c{with_confidence ? confidence.as<float>() : nullptr, w, h, w};
      if (wide) {
        engine.compute_device(make_image_view(left.as<std::uint16_t>(), w, h),
                              make_image_view(right.as<std::uint16_t>(), w, h), d, c, stream);
      } else {
        engine.compute_device(make_image_view(left.as<std::uint8_t>(), w, h),
                              make_image_view(right.as<std::uint8_t>(), w, h), d, c, stream);
      }
      after_call(&engine, left.device, stream);
    } else if (wide) {
      engine.compute(make_image_view(left.as<std::uint16_t>(), w, h), make_image_view(right.as<std::uint16_t>(), w, h),
                     disparity.as<float>(), with_confidence ? confidence.as<float>() : nullptr);
    } else {
      engine.compute(make_image_view(left.as<std::uint8_t>(), w, h), make_image_view(right.as<std::uint8_t>(), w, h),
                     disparity.as<float>(), with_confidence ? confidence.as<float>() : nullptr);
    }
  }
  if (!with_confidence) return export_array(disparity, framework);
  return nb::make_tuple(export_array(disparity, framework), export_array(confidence, framework));
}

std::pair<Input, Input> pair_of(nb::handle left_obj, nb::handle right_obj) {
  Input left = input(left_obj, "left", {DType::kUint8, DType::kUint16}, {kAny, kAny});
  Input right = input(right_obj, "right", {dtype_of(left)}, {left.dim(0), left.dim(1)});
  require_same_device(left, {&right});
  return {std::move(left), std::move(right)};
}

class PySgmEngine {
 public:
  PySgmEngine(int width, int height, const std::string& device, const nb::kwargs& kwargs)
      : engine_(parse_device(device), sgm_params(kwargs), width, height) {}
  // The engine's destructor waits for its own streams only; work it queued on a caller's stream may still read
  // its buffers.
  ~PySgmEngine() {
    try {
      finish_calls(&engine_);
    } catch (...) {
    }
  }
  PySgmEngine(const PySgmEngine&) = delete;
  PySgmEngine& operator=(const PySgmEngine&) = delete;
  nb::object compute(nb::handle left_obj, nb::handle right_obj, nb::handle stream) {
    auto [left, right] = pair_of(left_obj, right_obj);
    require_engine_device(engine_.device(), left.device, "left");
    if (left.dim(1) != engine_.width() || left.dim(0) != engine_.height()) {
      throw InvalidArgument(("left: expected shape [" + std::to_string(engine_.height()) + ", " +
                             std::to_string(engine_.width()) + "] (the engine's size)")
                                .c_str());
    }
    return match(engine_, left, right, stream);
  }
  const stereo::SgmEngine& engine() const { return engine_; }

 private:
  stereo::SgmEngine engine_;
};

const char* kSgmDoc =
    "Semi-global matching on rectified grey images (uint8 or uint16 [H, W], left and right): disparity float32 "
    "[H, W] in pixels, left view, +inf where invalid; with confidence=True also the confidence. Keyword arguments "
    "are SgmParams' fields (docs/SGM-DEPTH.md): disparities, min_disparity, paths, p1, p2, census (\"9x7\", "
    "\"cs9x7\"), uniqueness, subpixel, lr_check, lr_method (\"right-sgm\", \"volume\"), lr_max_diff, median, "
    "speckle_size, speckle_range, fill, confidence.";

}  // namespace

void bind_stereo(nb::module_& m) {
  nb::class_<PySgmEngine>(m, "SgmEngine",
                          "A matcher for one device, parameter set and image size; allocates once, reuses its "
                          "buffers for every pair.")
      .def(nb::init<int, int, const std::string&, const nb::kwargs&>(), "width"_a, "height"_a, "device"_a = "cpu",
           "kwargs"_a)
      .def("compute", &PySgmEngine::compute, "left"_a, "right"_a, nb::kw_only(), "stream"_a = nb::none(), kSgmDoc)
      .def_prop_ro("device", [](const PySgmEngine& e) { return e.engine().device().to_string(); })
      .def_prop_ro("width", [](const PySgmEngine& e) { return e.engine().width(); })
      .def_prop_ro("height", [](const PySgmEngine& e) { return e.engine().height(); });
  m.def(
      "sgm",
      [](nb::handle left_obj, nb::handle right_obj, nb::handle stream, const nb::kwargs& kwargs) {
        auto [left, right] = pair_of(left_obj, right_obj);
        const stereo::SgmParams params = sgm_params(kwargs);
        const int w = static_cast<int>(left.dim(1)), h = static_cast<int>(left.dim(0));
        // One engine per thread and device, rebuilt when the size or the parameters change.
        thread_local std::map<std::string, std::unique_ptr<stereo::SgmEngine>> engines;
        std::unique_ptr<stereo::SgmEngine>& slot = engines[left.device.to_string()];
        if (!slot || slot->width() != w || slot->height() != h || !same_params(slot->params(), params)) {
          if (slot) finish_calls(slot.get());  // as ~PySgmEngine
          slot.reset();
          slot = std::make_unique<stereo::SgmEngine>(left.device, params, w, h);
        }
        return match(*slot, left, right, stream);
      },
      "left"_a, "right"_a, nb::kw_only(), "stream"_a = nb::none(), "kwargs"_a, kSgmDoc);
}

}  // namespace s3d::python
