#include "png_decode.hpp"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "s3d/core/errors.hpp"

namespace s3d::io::detail {
namespace {

// What libpng's callbacks reach: the input and the first error message.
struct Source {
  const std::vector<std::uint8_t>* bytes = nullptr;
  std::size_t pos = 0;
  char error[256] = {};
};

void on_error(png_structp png, png_const_charp message) {
  auto* src = static_cast<Source*>(png_get_error_ptr(png));
  std::snprintf(src->error, sizeof src->error, "%s", message ? message : "unknown libpng error");
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // the image still decodes: nothing to report

void read_bytes(png_structp png, png_bytep out, png_size_t size) {
  auto* src = static_cast<Source*>(png_get_io_ptr(png));
  if (src->pos + size > src->bytes->size()) png_error(png, "truncated file");
  std::memcpy(out, src->bytes->data() + src->pos, size);
  src->pos += size;
}

constexpr std::uint64_t kMaxPixels = 1ull << 30;  // OpenCV's CV_IO_MAX_IMAGE_PIXELS default

// The libpng part, free of C++ objects with destructors between setjmp and a longjmp (`image` and `rows`
// are owned by the caller). Returns false with src.error set on failure.
bool decode_into(png_structp png, png_infop info, Source& src, cv::Mat& image, std::vector<png_bytep>& rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, &src, read_bytes);
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, nullptr, nullptr, nullptr);
  if (static_cast<std::uint64_t>(width) * height > kMaxPixels) {
    std::snprintf(src.error, sizeof src.error, "%ux%u is more than 2^30 pixels", width, height);
    return false;
  }
  // The channel count OpenCV's PngDecoder::readHeader chooses for IMREAD_UNCHANGED.
  int channels = 1;
  if (color_type == PNG_COLOR_TYPE_RGB || color_type == PNG_COLOR_TYPE_PALETTE) {
    png_bytep trans = nullptr;
    int num_trans = 0;
    png_color_16p trans_values = nullptr;
    png_get_tRNS(png, info, &trans, &num_trans, &trans_values);
    channels = num_trans > 0 ? 4 : 3;
  } else if (color_type == PNG_COLOR_TYPE_GRAY_ALPHA || color_type == PNG_COLOR_TYPE_RGB_ALPHA) {
    channels = 4;
  }
  const bool sixteen = bit_depth == 16;
  // The transforms of PngDecoder::readData for that type.
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (sixteen) png_set_swap(png);  // PNG stores big endian; cv::Mat holds native uint16
#endif
  if (channels < 4)
    png_set_strip_alpha(png);
  else
    png_set_tRNS_to_alpha(png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) && channels > 1)
    png_set_bgr(png);
  else if (channels > 1)
    png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  image.create(static_cast<int>(height), static_cast<int>(width), CV_MAKETYPE(sixteen ? CV_16U : CV_8U, channels));
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = image.ptr(static_cast<int>(y));
  png_read_image(png, rows.data());
  return true;
}

}  // namespace

bool is_png(const std::vector<std::uint8_t>& bytes) {
  return bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0;
}

cv::Mat decode_png(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  Source src;
  src.bytes = &bytes;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, on_error, on_warning);
  if (!png) throw IoError(name + ": cannot decode image: out of memory in libpng");
  png_infop info = png_create_info_struct(png);
  cv::Mat image;
  std::vector<png_bytep> rows;
  const bool ok = info && decode_into(png, info, src, image, rows);
  png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  if (!ok) throw IoError(name + ": cannot decode image: " + (src.error[0] ? src.error : "not a PNG libpng reads"));
  return image;
}

}  // namespace s3d::io::detail
