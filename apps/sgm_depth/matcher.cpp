#include "matcher.hpp"

#include <utility>

#include "s3d/core/errors.hpp"

namespace s3d::sgm_depth {
namespace {
constexpr int kDepth = 2;  // pairs in flight per device: one computing, the next one uploading
}  // namespace

PairMatcher::PairMatcher(const std::vector<Device>& devices, const stereo::SgmParams& params, std::size_t max_memory)
    : params_(params) {
  for (const Device& d : devices) lanes_.push_back(Lane{d, MemoryBudget(d, max_memory), nullptr});
}

void PairMatcher::build(int w, int h, const std::string& name) {
  discard();
  for (Lane& lane : lanes_) lane.pipeline.reset();
  try {
    params_.validate(w, h);
  } catch (const InvalidArgument& e) {
    // D or the window does not fit this image: a property of this item, not of the command line.
    throw DataError(name + ": " + e.what());
  }
  // Before any allocation: a pair that can never fit fails alone; an allocation that fails below the
  // limit (memory held by others) stays OutOfMemory, transient.
  for (const Lane& lane : lanes_) lane.budget.check(name, params_, w, h, kDepth);
  try {
    for (Lane& lane : lanes_) lane.pipeline = std::make_unique<stereo::SgmPipeline>(lane.device, params_, w, h, kDepth);
  } catch (...) {
    for (Lane& lane : lanes_) lane.pipeline.reset();  // all lanes or none: the next call builds them again
    throw;
  }
}

// Drops the pairs in flight (queued for items that never came: they failed before matching).
void PairMatcher::discard() {
  for (Lane& lane : lanes_)
    if (lane.pipeline && lane.pipeline->in_flight() > 0) lane.pipeline->drain();
  queued_.clear();
}

// Queues `p` on the lane with the fewest pairs in flight (of a tie, the first after the last one used:
// consecutive pairs alternate); false when every lane is full.
bool PairMatcher::submit(const LoadedPair& p, std::size_t index) {
  std::size_t best = lanes_.size();
  const std::size_t after = queued_.empty() ? lanes_.size() - 1 : queued_.back().lane;
  for (std::size_t k = 1; k <= lanes_.size(); ++k) {
    const std::size_t l = (after + k) % lanes_.size();
    const stereo::SgmPipeline& pipe = *lanes_[l].pipeline;
    if (!pipe.full() && (best == lanes_.size() || pipe.in_flight() < lanes_[best].pipeline->in_flight())) best = l;
  }
  if (best == lanes_.size()) return false;
  stereo::SgmPipeline& pipe = *lanes_[best].pipeline;
  if (p.sixteen())
    pipe.submit(p.left16.cview(), p.right16.cview());
  else
    pipe.submit(p.left8.cview(), p.right8.cview());
  queued_.push_back(Queued{index, best});
  return true;
}

Match PairMatcher::match(std::size_t index, const LoadedPair& pair, const PairsAhead& ahead, const std::string& name,
                         cli::ItemContext& ctx) {
  const int w = pair.width(), h = pair.height();
  const stereo::SgmPipeline* first = lanes_.front().pipeline.get();
  if (!first || first->width() != w || first->height() != h) build(w, h, name);
  if (!queued_.empty() && queued_.front().index != index) discard();
  // On the CPU, submit computes the pair: its time is compute, not upload.
  const bool cpu = lanes_.front().device.is_cpu();
  {
    cli::StageTimer timer(ctx, cpu ? "compute" : "upload");
    if (queued_.empty()) submit(pair, index);
    // The pairs after it, in order, up to the first that is not queued yet and cannot be: each lane computes
    // one pair and uploads the next (with one device: this pair and the next one).
    for (const auto& [next_index, next] : ahead) {
      if (next->width() != w || next->height() != h) break;
      bool queued = false;
      for (const Queued& q : queued_) queued = queued || q.index == next_index;
      if (!queued && !submit(*next, next_index)) break;
    }
  }
  cli::StageTimer timer(ctx, cpu ? "compute" : "compute_download");
  stereo::SgmResult result;
  lanes_[queued_.front().lane].pipeline->retrieve(result);
  queued_.pop_front();
  Match m;  // the result's storage becomes the image's (no w x h fill first: this is the main thread)
  m.disparity.width = w;
  m.disparity.height = h;
  m.disparity.data = std::move(result.disparity);
  m.confidence = std::move(result.confidence);
  return m;
}

}  // namespace s3d::sgm_depth
