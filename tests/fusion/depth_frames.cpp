#include "depth_frames.hpp"

#include <jpeglib.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "test_support.hpp"

namespace s3d::test {

std::filesystem::path redkitchen_dir() { return data_dir() / "rgbd" / "7scenes_redkitchen_f000-299"; }

Image<float> read_redkitchen_depth(int frame) {
  char name[64];
  std::snprintf(name, sizeof name, "frame-%06d.depth.png", frame);
  return read_depth_png(redkitchen_dir() / name, 1000.0f);
}

Image<float> read_depth_png(const std::filesystem::path& path, float scale) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw std::runtime_error("libpng cannot read " + path.string());
  }
  png_init_io(png, file.get());
  png_read_info(png, info);
  const int width = static_cast<int>(png_get_image_width(png, info));
  const int height = static_cast<int>(png_get_image_height(png, info));
  if (png_get_bit_depth(png, info) != 16 || png_get_color_type(png, info) != PNG_COLOR_TYPE_GRAY) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw std::runtime_error(path.string() + " is not a 16-bit grey PNG");
  }
  png_set_swap(png);  // PNG is big-endian; this machine is not
  std::vector<std::uint16_t> raw(static_cast<std::size_t>(width) * height);
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y)
    rows[y] = reinterpret_cast<png_bytep>(raw.data() + static_cast<std::size_t>(y) * width);
  png_read_image(png, rows.data());
  png_destroy_read_struct(&png, &info, nullptr);
  Image<float> depth(width, height);
  for (std::size_t i = 0; i < raw.size(); ++i)
    depth.data[i] = (raw[i] == 0 || raw[i] == 65535) ? 0.0f : static_cast<float>(raw[i]) / scale;
  return depth;
}

namespace {

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};

void jpeg_error_exit(j_common_ptr info) { std::longjmp(reinterpret_cast<JpegError*>(info->err)->jump, 1); }

}  // namespace

Image<std::uint8_t> read_redkitchen_color(int frame) {
  char name[64];
  std::snprintf(name, sizeof name, "frame-%06d.color.jpg", frame);
  const std::filesystem::path path = redkitchen_dir() / name;
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  jpeg_decompress_struct info;
  JpegError error;
  info.err = jpeg_std_error(&error.mgr);
  error.mgr.error_exit = jpeg_error_exit;
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&info);
    throw std::runtime_error("libjpeg cannot read " + path.string());
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file.get());
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  Image<std::uint8_t> rgb(static_cast<int>(info.output_width), static_cast<int>(info.output_height), 3);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = rgb.data.data() + static_cast<std::size_t>(info.output_scanline) * info.output_width * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return rgb;
}

}  // namespace s3d::test
