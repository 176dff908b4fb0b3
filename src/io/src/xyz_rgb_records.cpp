#include "xyz_rgb_records.hpp"

#include "s3d/core/cpu_dispatch.hpp"

#if S3D_CPU_DISPATCH
#include <immintrin.h>
#endif

namespace s3d::io::detail {
namespace {

#if S3D_CPU_DISPATCH
constexpr std::uint64_t kPrefetchAhead = 4096;  // bytes of input

// Sixteen records a step, as four groups of four. A group is four 16-byte loads, one per record (its 15
// bytes and the next record's first): their x y z bytes are packed by shifts into three 16-byte stores,
// and their last four bytes (r g b + one) gathered into one vector that a byte shuffle makes planar
// (r r r r g g g g b b b b). A 4x4 transpose of the four groups then gives sixteen reds, greens, blues.
S3D_TARGET_AVX2 std::uint64_t split_avx2(const std::uint8_t* in, std::uint64_t count, std::uint8_t* xyz,
                                         std::uint8_t* red, std::uint8_t* green, std::uint8_t* blue) {
  const __m128i keep12 = _mm_setr_epi32(-1, -1, -1, 0);
  const __m128i keep8 = _mm_setr_epi32(-1, -1, 0, 0);
  const __m128i keep4 = _mm_setr_epi32(-1, 0, 0, 0);
  const __m128i planar = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  auto load = [](const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  auto store = [](std::uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); };
  std::uint64_t i = 0;
  for (; i + 16 < count; i += 16) {  // the last load ends at (i + 16) * 15 + 1 bytes
    // The records a page or so ahead: the hardware prefetcher stops at each 4 KiB page of the file mapping.
    // (An address, not a pointer: near the end it lies past the data, which a prefetch may name.)
    const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(in) + i * 15 + kPrefetchAhead;
    for (std::uintptr_t line = 0; line < 240; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
    __m128i colours[4];
    for (int q = 0; q < 4; ++q) {
      const std::uint8_t* record = in + (i + 4 * q) * 15;
      const __m128i v0 = load(record), v1 = load(record + 15), v2 = load(record + 30), v3 = load(record + 45);
      std::uint8_t* out = xyz + (i + 4 * q) * 12;
      store(out, _mm_or_si128(_mm_and_si128(v0, keep12), _mm_slli_si128(v1, 12)));
      store(out + 16, _mm_or_si128(_mm_and_si128(_mm_srli_si128(v1, 4), keep8), _mm_slli_si128(v2, 8)));
      store(out + 32, _mm_or_si128(_mm_and_si128(_mm_srli_si128(v2, 8), keep4), _mm_slli_si128(v3, 4)));
      const __m128i last01 = _mm_unpackhi_epi32(v0, v1);  // dwords 2 and 3 of records 0 and 1
      const __m128i last23 = _mm_unpackhi_epi32(v2, v3);
      colours[q] = _mm_shuffle_epi8(_mm_unpackhi_epi64(last01, last23), planar);
    }
    const __m128i red_green01 = _mm_unpacklo_epi32(colours[0], colours[1]);
    const __m128i red_green23 = _mm_unpacklo_epi32(colours[2], colours[3]);
    const __m128i blue01 = _mm_unpackhi_epi32(colours[0], colours[1]);
    const __m128i blue23 = _mm_unpackhi_epi32(colours[2], colours[3]);
    store(red + i, _mm_unpacklo_epi64(red_green01, red_green23));
    store(green + i, _mm_unpackhi_epi64(red_green01, red_green23));
    store(blue + i, _mm_unpacklo_epi64(blue01, blue23));
  }
  return i;
}
#endif

}  // namespace

std::uint64_t split_xyz_rgb_records(const std::uint8_t* in, std::uint64_t count, std::uint8_t* xyz, std::uint8_t* red,
                                    std::uint8_t* green, std::uint8_t* blue) {
#if S3D_CPU_DISPATCH
  if (cpu_avx2_enabled()) return split_avx2(in, count, xyz, red, green, blue);
#endif
  (void)in, (void)count, (void)xyz, (void)red, (void)green, (void)blue;
  return 0;
}

}  // namespace s3d::io::detail
