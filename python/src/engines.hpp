#pragma once
// The engine each module-level function runs on: one per thread, op and device, kept for the thread's life, so
// that repeated calls reuse the engine's buffers as the tools' batches do (an `s3d.*Engine` object does the
// same for its owner).
#include <map>
#include <memory>
#include <string>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"

namespace s3d::python {

template <typename Engine>
Engine& cached_engine(const Device& device) {
  thread_local std::map<std::string, std::unique_ptr<Engine>> engines;
  std::unique_ptr<Engine>& slot = engines[device.to_string()];
  if (!slot) slot = std::make_unique<Engine>(device);
  return *slot;
}

/// Orders the CUDA calls of one engine that come on different streams: an engine reuses its scratch buffers in
/// its next call, which must not start before the last call's work is done. before_call makes `stream` wait for
/// the engine's last call (an event recorded on the last call's stream, when that stream differs); after_call
/// records this call's end on `stream`; finish_calls blocks until the last call is done (before an engine whose
/// work ran on a caller's stream is destroyed).
void before_call(const void* engine, const Device& device, StreamHandle stream);
void after_call(const void* engine, const Device& device, StreamHandle stream);
void finish_calls(const void* engine);

/// The engine's device must be the array's. @throws nb::value_error.
void require_engine_device(const Device& engine, const Device& array, const char* name);

/// `cpu`, `cuda`, `cuda:N` or `auto` as a concrete device (`auto`: cuda:0 when a GPU is visible).
Device parse_device(const std::string& text);

}  // namespace s3d::python
