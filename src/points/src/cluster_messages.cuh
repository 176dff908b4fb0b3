#pragma once
// Internal, sm_90 only: one-way messages between the blocks of a thread-block cluster. A sender writes into
// a peer block's shared memory with st.async, which also counts the bytes on an mbarrier in that block; the
// receiver waits on its own mbarrier until the bytes it expects have landed. No cluster-wide barrier: each
// block waits only for the data it reads (an H100 cluster.sync() costs ~0.7 us; FPS needs one exchange a step).
#include <cuda_runtime.h>

#include <cstdint>

#include "s3d/core/cuda_arch.cuh"

#if S3D_CUDA_ARCH >= 900
namespace s3d::points::detail::cluster_messages {

/// The shared-memory address (the .shared window) of a block-local pointer.
__device__ __forceinline__ std::uint32_t local_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// The same variable's address in the block of cluster rank `rank`.
__device__ __forceinline__ std::uint32_t peer_address(std::uint32_t local, unsigned rank) {
  std::uint32_t peer;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer) : "r"(local), "r"(rank));
  return peer;
}

/// One thread: an mbarrier that completes a phase with one arrival and the expected bytes; then made
/// visible to the cluster (a cluster barrier must follow before any peer sends).
__device__ __forceinline__ void init_barrier(std::uint32_t barrier) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrier) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// The one arrival of the barrier's current phase, expecting `bytes` from senders (they may come first).
__device__ __forceinline__ void expect_bytes(std::uint32_t barrier, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier), "r"(bytes) : "memory");
}

/// Waits until the barrier's phase of parity `parity` has completed; its bytes are then visible.
__device__ __forceinline__ void wait_phase(std::uint32_t barrier, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_PHASE:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_PHASE;\n"
      "}\n" ::"r"(barrier),
      "r"(parity)
      : "memory");
}

/// Writes `value` at the peer address `to` and counts its bytes on the peer mbarrier `barrier`.
__device__ __forceinline__ void send(std::uint32_t to, unsigned long long value, std::uint32_t barrier) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(to), "l"(value),
               "r"(barrier)
               : "memory");
}
__device__ __forceinline__ void send(std::uint32_t to, float4 value, std::uint32_t barrier) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(to),
               "r"(__float_as_uint(value.x)), "r"(__float_as_uint(value.y)), "r"(__float_as_uint(value.z)),
               "r"(__float_as_uint(value.w)), "r"(barrier)
               : "memory");
}

}  // namespace s3d::points::detail::cluster_messages
#endif
