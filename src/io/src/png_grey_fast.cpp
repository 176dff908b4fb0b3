#include "png_grey_fast.hpp"

#include <libdeflate.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace s3d::io::detail {
namespace {

constexpr std::uint32_t kMaxDimension = 1000000;  // libpng's default user limit (PNG_USER_WIDTH_MAX)
constexpr std::uint64_t kMaxPixels = 1ull << 30;  // OpenCV's CV_IO_MAX_IMAGE_PIXELS default
constexpr std::uint32_t kMaxChunk = 8000000;      // libpng refuses larger chunks (PNG_USER_CHUNK_MALLOC_MAX) but
                                                  // may take a larger IDAT: such files go to libpng, which decides
constexpr std::size_t kKeptBuffer = std::size_t{64} << 20;  // a thread's buffers beyond this are freed after use

std::uint32_t be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

bool is_type(const std::uint8_t* p, const char* type) { return std::memcmp(p, type, 4) == 0; }

bool letters(const std::uint8_t* p) {
  for (int i = 0; i < 4; ++i)
    if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z'))) return false;
  return true;
}

// One decompressor and one inflate buffer per thread, reused by every image the thread decodes.
struct Inflater {
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> decompressor{
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor};
  std::vector<std::uint8_t> idat;      // the IDAT chunks' data, joined (only when there are several)
  std::vector<std::uint8_t> filtered;  // the inflated rows, each a filter byte and the row's bytes
};

Inflater& inflater() {
  thread_local Inflater state;
  return state;
}

int paeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = p > a ? p - a : a - p, pb = p > b ? p - b : b - p, pc = p > c ? p - c : c - p;
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// Undoes a row's filter in place; `prior` is the unfiltered row above (zeros for the first row).
bool unfilter(std::uint8_t filter, std::uint8_t* row, const std::uint8_t* prior, std::size_t n, std::size_t bpp) {
  switch (filter) {
    case 0:
      return true;
    case 1:
      for (std::size_t i = bpp; i < n; ++i) row[i] = static_cast<std::uint8_t>(row[i] + row[i - bpp]);
      return true;
    case 2:
      for (std::size_t i = 0; i < n; ++i) row[i] = static_cast<std::uint8_t>(row[i] + prior[i]);
      return true;
    case 3:
      for (std::size_t i = 0; i < bpp; ++i) row[i] = static_cast<std::uint8_t>(row[i] + (prior[i] >> 1));
      for (std::size_t i = bpp; i < n; ++i)
        row[i] = static_cast<std::uint8_t>(row[i] + ((row[i - bpp] + prior[i]) >> 1));
      return true;
    case 4:
      for (std::size_t i = 0; i < bpp; ++i) row[i] = static_cast<std::uint8_t>(row[i] + prior[i]);
      for (std::size_t i = bpp; i < n; ++i)
        row[i] = static_cast<std::uint8_t>(row[i] + paeth(row[i - bpp], prior[i], prior[i - bpp]));
      return true;
    default:
      return false;  // libpng: "bad adaptive filter value"
  }
}

// ITU-R BT.601 luma as OpenCV's cvtColor(COLOR_BGR2GRAY) computes it for 8-bit samples: 15 fractional bits,
// rounded (docs/SGM-DEPTH.md).
std::uint8_t luma(std::uint32_t r, std::uint32_t g, std::uint32_t b) {
  return static_cast<std::uint8_t>((r * 9798u + g * 19235u + b * 3735u + (1u << 14)) >> 15);
}

void to_grey8(const std::uint8_t* row, std::uint8_t* out, int width, int channels) {
  switch (channels) {
    case 1:
      std::memcpy(out, row, static_cast<std::size_t>(width));
      break;
    case 2:  // grey + alpha: OpenCV expands grey to BGR, whose luma is the grey itself
      for (int x = 0; x < width; ++x) out[x] = row[2 * x];
      break;
    case 3:
      for (int x = 0; x < width; ++x) out[x] = luma(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
      break;
    default:
      for (int x = 0; x < width; ++x) out[x] = luma(row[4 * x], row[4 * x + 1], row[4 * x + 2]);
      break;
  }
}

}  // namespace

GreyImage decode_png_grey_fast(const std::uint8_t* data, std::size_t size) {
  GreyImage none;
  // The signature, then IHDR: 13 bytes, its CRC right.
  if (size < 8 + 25 || be32(data + 8) != 13 || !is_type(data + 12, "IHDR")) return none;
  if (libdeflate_crc32(0, data + 12, 17) != be32(data + 29)) return none;
  const std::uint8_t* ihdr = data + 16;
  const std::uint32_t width = be32(ihdr), height = be32(ihdr + 4);
  const int bit_depth = ihdr[8], colour_type = ihdr[9];
  if (width == 0 || height == 0 || width > kMaxDimension || height > kMaxDimension ||
      std::uint64_t{width} * height > kMaxPixels)
    return none;
  if (ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] != 0) return none;  // compression, filter method, interlace
  int channels = 0;
  if (bit_depth == 8 && colour_type == 0) channels = 1;
  if (bit_depth == 8 && colour_type == 4) channels = 2;
  if (bit_depth == 8 && colour_type == 2) channels = 3;
  if (bit_depth == 8 && colour_type == 6) channels = 4;
  if (bit_depth == 16 && colour_type == 0) channels = 1;
  if (channels == 0) return none;

  // The chunks up to the end of the IDAT run: critical ones known and CRC-checked, IDAT consecutive.
  Inflater& state = inflater();
  const std::uint8_t* single = nullptr;  // the one IDAT's data, when there is only one (no copy)
  std::size_t idat_bytes = 0;
  int idats = 0, palette = 0;
  bool in_idat_run = false;
  for (std::size_t at = 33;;) {
    if (at + 12 > size) return none;
    const std::uint32_t length = be32(data + at);
    const std::uint8_t* type = data + at + 4;
    if (length > kMaxChunk || length > size - at - 12 || !letters(type)) return none;
    const bool critical = type[0] >= 'A' && type[0] <= 'Z';
    const bool idat = is_type(type, "IDAT");
    if (in_idat_run && !idat) break;  // libpng reads no further to decode the image
    if (critical) {
      // A palette is only a hint in RGB(A); libpng refuses a second one or an empty one.
      const bool hint = is_type(type, "PLTE") && (colour_type == 2 || colour_type == 6) && length > 0 && !palette++;
      if (!idat && !hint) return none;
      if (libdeflate_crc32(0, type, length + 4) != be32(data + at + 8 + length)) return none;
    }
    if (idat) {
      in_idat_run = true;
      if (++idats == 1) {
        single = data + at + 8;
      } else {
        if (idats == 2) state.idat.assign(single, single + idat_bytes);
        state.idat.insert(state.idat.end(), data + at + 8, data + at + 8 + length);
      }
      idat_bytes += length;
    }
    at += 12 + std::size_t{length};
    if (at == size && in_idat_run) break;
  }
  if (idats == 0 || !state.decompressor) return none;
  const std::uint8_t* stream = idats == 1 ? single : state.idat.data();
  // libdeflate ignores the zlib header's window size; zlib (libpng) refuses a distance beyond it. Streams with
  // a window below 32 KiB (small images) go to libpng.
  if (idat_bytes < 2 || (stream[0] >> 4) != 7) return none;

  const std::size_t bpp = static_cast<std::size_t>(channels) * (bit_depth / 8);
  const std::size_t row_bytes = bpp * width;
  const std::size_t stride = row_bytes + 1;
  if (height > SIZE_MAX / stride) return none;  // a 32-bit size_t
  const std::size_t expected = stride * height;
  state.filtered.resize(expected);
  std::size_t in_used = 0, out_made = 0;
  if (libdeflate_zlib_decompress_ex(state.decompressor.get(), stream, idat_bytes, state.filtered.data(), expected,
                                    &in_used, &out_made) != LIBDEFLATE_SUCCESS ||
      out_made != expected || in_used != idat_bytes)
    return none;

  GreyImage out;
  std::vector<std::uint8_t> zeros(row_bytes, 0);
  if (bit_depth == 8)
    out.eight = ImageU8(static_cast<int>(width), static_cast<int>(height));
  else
    out.sixteen = ImageU16(static_cast<int>(width), static_cast<int>(height));
  const std::uint8_t* prior = zeros.data();
  for (std::uint32_t y = 0; y < height; ++y) {
    std::uint8_t* line = state.filtered.data() + y * stride;
    std::uint8_t* row = line + 1;
    if (!unfilter(line[0], row, prior, row_bytes, bpp)) return none;
    if (bit_depth == 8) {
      to_grey8(row, out.eight.data.data() + std::size_t{y} * width, static_cast<int>(width), channels);
    } else {
      std::uint16_t* dst = out.sixteen.data.data() + std::size_t{y} * width;
      for (std::uint32_t x = 0; x < width; ++x)
        dst[x] = static_cast<std::uint16_t>(row[2 * x] << 8 | row[2 * x + 1]);  // PNG stores big endian
    }
    prior = row;
  }
  out.bit_depth = bit_depth;
  if (state.filtered.capacity() > kKeptBuffer) state.filtered = {};  // one huge image: not held by every thread
  if (state.idat.capacity() > kKeptBuffer) state.idat = {};
  return out;
}

}  // namespace s3d::io::detail
