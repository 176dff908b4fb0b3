#include "outputs.hpp"

#include <algorithm>
#include <cmath>

#include "s3d/core/errors.hpp"
#include "s3d/geometry/disparity_geometry.hpp"
#include "s3d/io/colormap.hpp"
#include "s3d/io/pfm.hpp"
#include "s3d/io/ply.hpp"

namespace s3d::sgm_depth {

Emit parse_emit(const std::string& s) {
  if (s == "disparity") return Emit::kDisparity;
  if (s == "depth") return Emit::kDepth;
  if (s == "cloud") return Emit::kCloud;
  if (s == "confidence") return Emit::kConfidence;
  if (s == "color" || s == "colour") return Emit::kColor;
  if (s == "error") return Emit::kError;
  throw InvalidArgument("--emit " + s + ": expected disparity, depth, cloud, confidence, color or error");
}

const char* emit_name(Emit e) {
  switch (e) {
    case Emit::kDisparity:
      return "disparity";
    case Emit::kDepth:
      return "depth";
    case Emit::kCloud:
      return "cloud";
    case Emit::kConfidence:
      return "confidence";
    case Emit::kColor:
      return "color";
    case Emit::kError:
      return "error";
  }
  return "?";
}

const char* default_suffix(Emit e) {
  switch (e) {
    case Emit::kDisparity:
      return ".pfm";
    case Emit::kDepth:
      return "_depth.pfm";
    case Emit::kCloud:
      return "_cloud.ply";
    case Emit::kConfidence:
      return "_confidence.pfm";
    case Emit::kColor:
      return "_color.png";
    case Emit::kError:
      return "_error.png";
  }
  return "";
}

bool needs_calibration(Emit e) { return e == Emit::kDepth || e == Emit::kCloud; }

namespace {

template <typename Image, typename Writer>
void write_timed(cli::ItemContext& ctx, const std::string& path, const Image& image, Writer writer) {
  cli::StageTimer timer(ctx, "write");
  ctx.write_atomically(path, [&](const std::string& tmp) { writer(tmp, image); });
}

void write_pfm_file(cli::ItemContext& ctx, const std::string& path, const io::ImageF& image) {
  write_timed(ctx, path, image, [](const std::string& tmp, const io::ImageF& img) { io::write_pfm(tmp, img); });
}

template <typename Image>
void write_image_file(cli::ItemContext& ctx, const std::string& path, const Image& image) {
  write_timed(ctx, path, image, [](const std::string& tmp, const Image& img) { io::write_image(tmp, img); });
}

}  // namespace

void write_output(cli::ItemContext& ctx, const std::string& path, const std::string& fmt, Emit e,
                  const OutputSource& src, const EncodeSettings& settings) {
  const io::ImageF& disparity = src.disparity;
  const int w = disparity.width, h = disparity.height;
  auto bad_format = [&](const char* allowed) {
    return InvalidArgument(path + ": cannot write " + std::string(emit_name(e)) + " as '" + fmt + "' (use " + allowed +
                           ")");
  };
  cli::StageTimer encode(ctx, "encode");
  switch (e) {
    case Emit::kDisparity: {
      if (fmt == "pfm") {
        encode.stop();
        write_pfm_file(ctx, path, disparity);
      } else if (fmt == "png") {
        const io::PngEncoding enc =
            settings.png_encoding.empty() ? io::PngEncoding::kKitti : io::parse_png_encoding(settings.png_encoding);
        const io::ImageU16 img = io::encode_png16(disparity, enc);
        encode.stop();
        write_image_file(ctx, path, img);
      } else {
        throw bad_format(".pfm or .png");
      }
      break;
    }
    case Emit::kDepth: {
      if (fmt != "pfm" && fmt != "png") throw bad_format(".pfm (metres) or .png (depth * --depth-scale)");
      io::ImageF depth(w, h);
      geometry::depth_from_disparity(disparity.cview(), *src.calib, depth.view());
      if (fmt == "pfm") {
        encode.stop();
        write_pfm_file(ctx, path, depth);
      } else {
        const io::ImageU16 img = io::encode_depth_png16(depth, settings.depth_scale);
        encode.stop();
        write_image_file(ctx, path, img);
      }
      break;
    }
    case Emit::kCloud: {
      // PLY is the only cloud format, so `-o -` needs no --format (`... --emit cloud -o - | pc-sample fps -`).
      if (fmt != "ply" && !(fmt.empty() && path == "-")) throw bad_format(".ply");
      const io::ImageU8 colour = io::read_rgb8(src.left_path);
      const geometry::ColourView colour_view{colour.data.data(), colour.width, colour.height, colour.channels};
      const PointCloud cloud = geometry::cloud_from_disparity(
          disparity.cview(), *src.calib, &colour_view, settings.max_depth > 0 ? settings.max_depth : io::kInvalid);
      const io::PlyFormat pf = settings.ply_ascii ? io::PlyFormat::kAscii : io::PlyFormat::kBinaryLittleEndian;
      encode.stop();
      cli::StageTimer timer(ctx, "write");
      ctx.write_atomically(path, [&](const std::string& tmp) { io::write_ply(tmp, cloud, pf); });
      break;
    }
    case Emit::kConfidence: {
      io::ImageF conf(w, h);
      conf.data = src.confidence;
      if (conf.data.size() != conf.pixels()) throw DataError(path + ": the matcher returned no confidence");
      if (fmt == "pfm") {
        encode.stop();
        write_pfm_file(ctx, path, conf);
      } else if (fmt == "png") {
        const io::ImageU8 img = io::encode_unit_png8(conf);
        encode.stop();
        write_image_file(ctx, path, img);
      } else {
        throw bad_format(".pfm or .png (confidence * 255)");
      }
      break;
    }
    case Emit::kColor: {
      if (fmt != "png" && fmt != "jpg" && fmt != "ppm" && fmt != "bmp") throw bad_format(".png");
      const io::ImageU8 img =
          io::colorize(disparity, settings.color_lo, settings.color_hi, io::parse_colormap(settings.colormap));
      encode.stop();
      write_image_file(ctx, path, img);
      break;
    }
    case Emit::kError: {
      if (fmt != "png" && fmt != "ppm" && fmt != "bmp") throw bad_format(".png");
      if (src.gt == nullptr)
        throw DataError(path + ": --emit error needs the pair's ground truth (--eval GT or a manifest `gt`)");
      static const std::vector<std::uint8_t> kNoMask;
      const io::ImageU8 img = io::disparity_error_image(disparity, *src.gt, src.nonocc ? *src.nonocc : kNoMask);
      encode.stop();
      write_image_file(ctx, path, img);
      break;
    }
  }
}

}  // namespace s3d::sgm_depth
