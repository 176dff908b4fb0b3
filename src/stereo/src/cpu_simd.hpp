#pragma once
// Run-time dispatch of the CPU hot loops: GCC compiles an AVX2 (or POPCNT) clone beside the baseline
// x86-64 one and picks by CPU feature at load time (ifunc), so the binaries still run on any x86-64.
// (Feature names, not "arch=": an arch clone is chosen only on that exact CPU family.)
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define S3D_STEREO_CLONES __attribute__((target_clones("avx2", "default")))
#define S3D_STEREO_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define S3D_STEREO_CLONES
#define S3D_STEREO_POPCNT_CLONES
#endif
