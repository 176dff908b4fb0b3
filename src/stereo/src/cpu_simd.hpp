#pragma once
// Run-time dispatch of the CPU hot loops: GCC compiles a Haswell (AVX2 + POPCNT) clone beside the
// baseline x86-64 one and picks at load time (ifunc), so the binaries still run on any x86-64.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define S3D_STEREO_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define S3D_STEREO_CLONES
#endif
