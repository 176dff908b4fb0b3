// Hard NMS of M ranked boxes of G groups, all groups in one batched pipeline: prepare the boxes, find the
// groups, lay the boxes out in tiles, build the sparse suppression mask, resolve greedy NMS, compact the kept.
#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {

template <bool kRot>
MaskShape hard_nms(const NmsInput& in, const NmsParams& prm, const Ranking& ranked, int sm_count, HardBuffers& b,
                   CubScratch& cub, HostReadback& readback, DeviceResult& result, StreamHandle st) {
  const int m = ranked.boxes;
  prepare_boxes<kRot>(ranked, in.boxes, prm.pixel_offset, /*with_extent=*/true, b.prepared, st);
  if (ranked.grouped) {
    find_groups(m, ranked.group_key_of_priority, b.groups, cub, st);
  } else {
    single_group(m, b.groups, st);
  }
  // Small problems stay in priority order (q = p): the dense lower triangle of tiles is then small enough to
  // bound the mask without asking the device how many pairs it has.
  const bool spatial = m > kPriorityOrderMaxBoxes;
  order_tiles<kRot>(ranked, b.prepared, b.groups, spatial, b.tiled, cub, st);
  const MaskShape shape = build_mask<kRot>(m, b.tiled, b.groups, !spatial, b.prepared.extent.data(), prm, sm_count,
                                           b.mask, cub, readback, st);
  resolve_greedy(m, b.mask, b.tiled, sm_count, b.scan, st);
  compact_kept(static_cast<int>(in.count), m, ranked, b.tiled, in.scores, b.scan, cub, result, st);
  return shape;
}

template MaskShape hard_nms<false>(const NmsInput&, const NmsParams&, const Ranking&, int, HardBuffers&, CubScratch&,
                                   HostReadback&, DeviceResult&, StreamHandle);
template MaskShape hard_nms<true>(const NmsInput&, const NmsParams&, const Ranking&, int, HardBuffers&, CubScratch&,
                                  HostReadback&, DeviceResult&, StreamHandle);

}  // namespace s3d::detection::detail
