#pragma once
// Run-time dispatch of the CPU hot loops, two ways:
// - S3D_CPU_CLONES: GCC compiles an AVX2 (or POPCNT) clone beside the baseline x86-64 one and picks by CPU
//   feature at load time (ifunc). (Feature names, not "arch=": an arch clone is chosen only on that CPU family.)
// - S3D_TARGET_AVX2 + cpu_avx2_enabled(): a loop body compiled twice by hand (one function with the attribute,
//   one without) and picked at each call, so that S3D_CPU_ISA=baseline can run the baseline variant on an AVX2
//   machine and tests compare the two in one process.
// "avx2" does not imply FMA and the project builds with -ffp-contract=off: every variant rounds the same way.
#include <cstdlib>
#include <cstring>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define S3D_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#define S3D_CPU_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define S3D_CPU_CLONES
#define S3D_CPU_POPCNT_CLONES
#endif

// (GCC's jump threading can split an AVX2 variant's loop body on its selects, which then stays scalar while
// the baseline one vectorises: such files are compiled with -fno-thread-jumps; see src/fusion/CMakeLists.txt.)
#if defined(__GNUC__) && defined(__x86_64__)
#define S3D_CPU_DISPATCH 1
#define S3D_TARGET_AVX2 __attribute__((target("avx2")))
#if defined(__clang__)
#define S3D_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#else  // 16-lane loops: GCC keeps 256-bit vectors on many tunings unless told
#define S3D_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")))
#endif
#define S3D_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define S3D_CPU_DISPATCH 0
#define S3D_TARGET_AVX2
#define S3D_TARGET_AVX512
#define S3D_ALWAYS_INLINE inline
#endif

// A region of AVX2 code with intrinsics (lambdas included), for loops written lane by lane: GCC's per-region
// target pragma. S3D_AVX2_REGION is 0 where there is none (other compilers and CPUs: the scalar loops run).
#if S3D_CPU_DISPATCH && !defined(__clang__)
#define S3D_AVX2_REGION 1
#define S3D_AVX2_REGION_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2\")")
#define S3D_AVX2_REGION_END _Pragma("GCC pop_options")
#else
#define S3D_AVX2_REGION 0
#endif

namespace s3d {

/// Highest instruction-set level the hand-dispatched CPU loops may use: 2 = any (AVX-512 where a loop has it),
/// 1 = AVX2 / POPCNT, 0 = baseline x86-64. The environment variable S3D_CPU_ISA (avx2 | baseline) lowers it,
/// so tests and comparisons can run every variant on one machine.
inline int cpu_isa_cap() {
  const char* isa = std::getenv("S3D_CPU_ISA");
  if (isa != nullptr && std::strcmp(isa, "baseline") == 0) return 0;
  if (isa != nullptr && std::strcmp(isa, "avx2") == 0) return 1;
  return 2;
}

/// Whether the S3D_TARGET_AVX2 variants run: the CPU has AVX2 and cpu_isa_cap() allows it.
inline bool cpu_avx2_enabled() {
#if S3D_CPU_DISPATCH
  return cpu_isa_cap() >= 1 && __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

/// Whether the S3D_TARGET_AVX512 variants run: the CPU has AVX-512 F, VL, BW and DQ and cpu_isa_cap() is 2.
inline bool cpu_avx512_enabled() {
#if S3D_CPU_DISPATCH
  return cpu_isa_cap() >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

}  // namespace s3d
