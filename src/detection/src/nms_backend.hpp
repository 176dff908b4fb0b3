#pragma once
// Internal: the CPU backend's entry point (nms_cpu.cpp), used by the dispatcher and the CPU engine.
#include "s3d/detection/nms.hpp"

namespace s3d::detection::detail {

/// The CPU backend: host inputs (already validated), host result.
NmsResult nms_cpu(const NmsInput& input, const NmsParams& params);

}  // namespace s3d::detection::detail
