// s3d.nms, batched_nms, soft_nms, rotated_nms and NmsEngine: s3d::detection with torchvision's argument order.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>

#include "arrays.hpp"
#include "engines.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/detection/nms.hpp"
#include "staging.hpp"

namespace s3d::python {
namespace {

using namespace nb::literals;

/// Runs one NMS call; returns keep (int64 [K]) and, when `with_scores`, the final scores (float32 [K]).
nb::object run_nms(detection::NmsEngine& engine, nb::handle boxes_obj, nb::handle scores_obj, nb::handle groups_obj,
                   const detection::NmsParams& params, bool with_scores, nb::handle stream_obj) {
  params.validate();
  const Input boxes = input(boxes_obj, "boxes", {DType::kFloat32}, {kAny, params.box_dim()});
  const Input scores = input(scores_obj, "scores", {DType::kFloat32}, {boxes.dim(0)});
  std::optional<Input> groups;
  if (!groups_obj.is_none()) {
    groups = input(groups_obj, "idxs", {DType::kInt64}, {boxes.dim(0)});
    require_same_device(boxes, {&scores, &*groups});
  } else {
    require_same_device(boxes, {&scores});
  }
  require_engine_device(engine.device(), boxes.device, "boxes");
  detection::NmsInput in;
  in.boxes = boxes.as<float>();
  in.scores = scores.as<float>();
  in.group_ids = groups ? groups->as<std::int64_t>() : nullptr;
  in.count = boxes.dim(0);
  const Framework framework = framework_of(boxes_obj);
  if (boxes.device.is_cuda()) {
    const StreamHandle stream = resolve_stream(stream_obj, boxes);
    std::int64_t kept = 0;
    {
      nb::gil_scoped_release release;
      // The device path does not check coordinates; the host path does (DataError naming the box), so the
      // same bad input fails the same way on both only where the caller checks: docs/PYTHON.md says so.
      before_call(&engine, boxes.device, stream);
      engine.run_device_async(in, params, stream);
      if (in.count > 0) {
        ScopedDevice scoped(boxes.device.index());
        detail::copy_bytes_async(&kept, engine.device_keep_count(), sizeof kept, 2, stream);
        synchronize(stream);
      }
    }
    Output keep = copy_device_output(engine.device_keep(), DType::kInt64, {kept}, boxes.device, stream);
    Output final_scores;
    if (with_scores)
      final_scores = copy_device_output(engine.device_scores(), DType::kFloat32, {kept}, boxes.device, stream);
    after_call(&engine, boxes.device, stream);  // the copies read the engine's buffers: its next call waits for them
    if (!with_scores) return export_array(keep, framework);
    return nb::make_tuple(export_array(keep, framework), export_array(final_scores, framework));
  }
  detection::NmsResult result;
  {
    nb::gil_scoped_release release;
    result = engine.run(in, params);
  }
  const std::int64_t kept = static_cast<std::int64_t>(result.keep.size());
  nb::object keep = export_array(adopt(std::move(result.keep), {kept}), framework);
  if (!with_scores) return keep;
  return nb::make_tuple(keep, export_array(adopt(std::move(result.scores), {kept}), framework));
}

detection::NmsParams hard(float iou_threshold, bool rotated) {
  detection::NmsParams p;
  p.iou_threshold = iou_threshold;
  p.rotated = rotated;
  return p;
}

detection::NmsParams soft(float iou_threshold, float sigma, float min_score, const std::string& method) {
  detection::NmsParams p;
  p.iou_threshold = iou_threshold;
  p.sigma = sigma;
  p.soft_min_score = min_score;
  if (method == "gaussian") {
    p.method = detection::NmsMethod::kSoftGaussian;
  } else if (method == "linear") {
    p.method = detection::NmsMethod::kSoftLinear;
  } else {
    throw InvalidArgument("method: expected \"gaussian\" or \"linear\"");
  }
  return p;
}

detection::NmsEngine& engine_for(nb::handle boxes) {
  return cached_engine<detection::NmsEngine>(input_any_shape(boxes, "boxes", {DType::kFloat32}, 2, 2).device);
}

const char* kNmsDoc =
    "Hard NMS with torchvision.ops.nms's arguments and semantics: boxes float32 [N, 4] (x1, y1, x2, y2), scores "
    "float32 [N]; returns int64 indices of the kept boxes by descending score (ties: lower index first).";
const char* kBatchedDoc =
    "torchvision.ops.batched_nms: boxes of different idxs (int64 [N], e.g. class) never suppress each other.";
const char* kSoftDoc =
    "Soft-NMS (Bodla et al. 2017; mmcv's soft_nms semantics): method \"gaussian\" (s *= exp(-IoU^2 / sigma)) or "
    "\"linear\" (s *= 1 - IoU above iou_threshold); boxes whose score falls below min_score are dropped. "
    "Returns (keep int64 [K], scores float32 [K]) by descending final score.";
const char* kRotatedDoc =
    "NMS of rotated boxes float32 [N, 5] (cx, cy, w, h, angle in radians, counter-clockwise in a y-up frame as "
    "mmcv's nms_rotated); exact polygon IoU. Returns int64 keep indices.";

}  // namespace

void bind_detection(nb::module_& m) {
  nb::class_<detection::NmsEngine>(m, "NmsEngine", "NMS on one device; keeps its buffers across calls.")
      .def(
          "__init__",
          [](detection::NmsEngine* self, const std::string& device) {
            new (self) detection::NmsEngine(parse_device(device));
          },
          "device"_a = "cpu")
      .def_prop_ro("device", [](const detection::NmsEngine& e) { return e.device().to_string(); })
      .def(
          "nms",
          [](detection::NmsEngine& e, nb::handle boxes, nb::handle scores, float iou, nb::handle stream) {
            return run_nms(e, boxes, scores, nb::none(), hard(iou, false), false, stream);
          },
          "boxes"_a, "scores"_a, "iou_threshold"_a, nb::kw_only(), "stream"_a = nb::none(), kNmsDoc)
      .def(
          "batched_nms",
          [](detection::NmsEngine& e, nb::handle boxes, nb::handle scores, nb::handle idxs, float iou,
             nb::handle stream) { return run_nms(e, boxes, scores, idxs, hard(iou, false), false, stream); },
          "boxes"_a, "scores"_a, "idxs"_a, "iou_threshold"_a, nb::kw_only(), "stream"_a = nb::none(), kBatchedDoc);

  m.def(
      "nms",
      [](nb::handle boxes, nb::handle scores, float iou, nb::handle stream) {
        return run_nms(engine_for(boxes), boxes, scores, nb::none(), hard(iou, false), false, stream);
      },
      "boxes"_a, "scores"_a, "iou_threshold"_a, nb::kw_only(), "stream"_a = nb::none(), kNmsDoc);
  m.def(
      "batched_nms",
      [](nb::handle boxes, nb::handle scores, nb::handle idxs, float iou, nb::handle stream) {
        return run_nms(engine_for(boxes), boxes, scores, idxs, hard(iou, false), false, stream);
      },
      "boxes"_a, "scores"_a, "idxs"_a, "iou_threshold"_a, nb::kw_only(), "stream"_a = nb::none(), kBatchedDoc);
  m.def(
      "soft_nms",
      [](nb::handle boxes, nb::handle scores, float iou, float sigma, float min_score, const std::string& method,
         nb::handle idxs, nb::handle stream) {
        return run_nms(engine_for(boxes), boxes, scores, idxs, soft(iou, sigma, min_score, method), true, stream);
      },
      "boxes"_a, "scores"_a, "iou_threshold"_a = 0.3f, nb::kw_only(), "sigma"_a = 0.5f, "min_score"_a = 1e-3f,
      "method"_a = "gaussian", "idxs"_a = nb::none(), "stream"_a = nb::none(), kSoftDoc);
  m.def(
      "rotated_nms",
      [](nb::handle boxes, nb::handle scores, float iou, nb::handle idxs, nb::handle stream) {
        return run_nms(engine_for(boxes), boxes, scores, idxs, hard(iou, true), false, stream);
      },
      "boxes"_a, "scores"_a, "iou_threshold"_a, nb::kw_only(), "idxs"_a = nb::none(), "stream"_a = nb::none(),
      kRotatedDoc);
}

}  // namespace s3d::python
