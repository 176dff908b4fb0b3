#include "matcher.hpp"

#include <utility>

#include "s3d/core/errors.hpp"

namespace s3d::sgm_depth {
namespace {
constexpr int kDepth = 2;  // pairs in flight: one computing, the next one uploading
}  // namespace

PairMatcher::PairMatcher(const Device& device, const stereo::SgmParams& params, MemoryBudget budget)
    : device_(device), params_(params), budget_(std::move(budget)) {}

void PairMatcher::submit(const LoadedPair& p, std::size_t index) {
  if (p.sixteen())
    pipeline_->submit(p.left16.cview(), p.right16.cview());
  else
    pipeline_->submit(p.left8.cview(), p.right8.cview());
  queued_.push_back(index);
}

Match PairMatcher::match(std::size_t index, const LoadedPair& pair, std::size_t next_index, const LoadedPair* next,
                         const std::string& name, cli::ItemContext& ctx) {
  const int w = pair.width(), h = pair.height();
  if (!pipeline_ || pipeline_->width() != w || pipeline_->height() != h) {
    pipeline_.reset();
    queued_.clear();
    try {
      params_.validate(w, h);
    } catch (const InvalidArgument& e) {
      // D or the window does not fit this image: a property of this item, not of the command line.
      throw DataError(name + ": " + e.what());
    }
    // Before any allocation: a pair that can never fit fails alone; an allocation that fails below the
    // limit (memory held by others) stays OutOfMemory, transient.
    budget_.check(name, params_, w, h, kDepth);
    pipeline_ = std::make_unique<stereo::SgmPipeline>(device_, params_, w, h, kDepth);
  }
  // A pair queued for an item that never came (it failed before matching) is dropped.
  if (!queued_.empty() && queued_.front() != index) {
    pipeline_->drain();
    queued_.clear();
  }
  // On the CPU, submit computes the pair: its time is compute, not upload.
  const bool cpu = pipeline_->engine().device().is_cpu();
  {
    cli::StageTimer timer(ctx, cpu ? "compute" : "upload");
    if (queued_.empty()) submit(pair, index);
    if (next && !pipeline_->full() && next->width() == w && next->height() == h) submit(*next, next_index);
  }
  cli::StageTimer timer(ctx, cpu ? "compute" : "compute_download");
  stereo::SgmResult result;
  pipeline_->retrieve(result);
  queued_.pop_front();
  Match m;
  m.disparity = io::ImageF(w, h);
  m.disparity.data = std::move(result.disparity);
  m.confidence = std::move(result.confidence);
  return m;
}

}  // namespace s3d::sgm_depth
