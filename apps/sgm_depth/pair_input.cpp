#include "pair_input.hpp"

#include <algorithm>

#include "s3d/core/errors.hpp"

namespace s3d::sgm_depth {
namespace {

// io errors start with the path they were given (for `-`, a temp file): keep only what follows it.
std::string strip_path(const std::string& message, const std::string& path) {
  if (message.rfind(path + ": ", 0) == 0) return message.substr(path.size() + 2);
  return message;
}

// Read and decoded apart, so that a record's stage_seconds tells the disk from the PNG decoder.
io::GreyImage read_named(const std::string& name, const std::string& path, cli::ItemContext& ctx) {
  try {
    cli::StageTimer read(ctx, "read");
    const std::vector<std::uint8_t> bytes = io::read_file_bytes(path);
    read.stop();
    cli::StageTimer decode(ctx, "decode");
    return io::decode_grey(bytes, path);
  } catch (const IoError& e) {
    throw IoError(name + ": " + strip_path(e.what(), path));
  }
}

LoadedPair load_pair(const std::string& left_name, const std::string& left_path, const std::string& right_name,
                     const std::string& right_path, cli::ItemContext& ctx) {
  io::GreyImage left = read_named(left_name, left_path, ctx);
  io::GreyImage right = read_named(right_name, right_path, ctx);
  auto size_of = [](const io::GreyImage& g) {
    return g.bit_depth == 16 ? size_text(g.sixteen.width, g.sixteen.height) : size_text(g.eight.width, g.eight.height);
  };
  if (size_of(left) != size_of(right))
    throw DataError(left_name + ": " + size_of(left) + " but " + right_name + " is " + size_of(right));
  LoadedPair p;
  p.left_bits = left.bit_depth;
  p.right_bits = right.bit_depth;
  // The 8-bit matcher path reads half the bytes: 8-bit pairs stay 8-bit. An 8-bit image beside a 16-bit one
  // is matched at 16 bits with its values as stored.
  if (p.sixteen()) {
    p.left16 = io::grey16_of(std::move(left));
    p.right16 = io::grey16_of(std::move(right));
  } else {
    p.left8 = std::move(left.eight);
    p.right8 = std::move(right.eight);
  }
  return p;
}

std::string field(const cli::Item& item, const char* key) {
  if (item.fields.is_object() && item.fields.contains(key) && item.fields[key].is_string())
    return item.fields[key].get<std::string>();
  return "";
}

}  // namespace

PairInput load_pair_input(const cli::Item& item, cli::ItemContext& ctx, const PairSources& sources) {
  const std::string& left_name = item.inputs.at(0);
  const std::string& right_name = item.inputs.at(1);
  // A dataset image without its partner (io::stereo_dataset_items): this item fails, the others go on.
  if (const std::string unpaired = field(item, "unpaired"); !unpaired.empty()) throw DataError(unpaired);
  PairInput in;
  in.left_path = ctx.readable_path(left_name);
  in.pair = load_pair(left_name, in.left_path, right_name, ctx.readable_path(right_name), ctx);
  cli::StageTimer timer(ctx, "read_extra");
  in.calib = sources.calib;
  if (const std::string c = field(item, "calib"); !c.empty() && !sources.calib)
    in.calib = std::make_shared<const io::StereoCalibration>(io::read_calibration(c));
  if (sources.needs_calib && !in.calib)
    throw DataError(left_name + ": --emit depth/cloud needs a calibration (--calib or `calib`)");

  in.gt_path = sources.eval.empty() ? field(item, "gt") : sources.eval;
  if (!in.gt_path.empty()) {
    double scale = sources.gt_scale;
    if (scale <= 0.0 && item.fields.is_object() && item.fields.contains("gt_scale") &&
        item.fields["gt_scale"].is_number())
      scale = item.fields["gt_scale"].get<double>();
    in.gt = io::read_disparity(in.gt_path, scale);
    const int w = in.pair.width(), h = in.pair.height();
    if (in.gt.width != w || in.gt.height != h)
      throw DataError(in.gt_path + ": ground truth is " + size_text(in.gt.width, in.gt.height) + " but " + left_name +
                      " is " + size_text(in.pair.width(), in.pair.height()));
    in.masks = io::find_masks(in.gt_path, w, h);
  }
  return in;
}

}  // namespace s3d::sgm_depth
