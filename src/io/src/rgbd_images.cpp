// A sequence's colour images: found in a folder by name or order, and read at the depth frame's size.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "s3d/core/errors.hpp"
#include "s3d/io/rgbd_sequence.hpp"

namespace s3d::io {
namespace {

namespace fs = std::filesystem;

/// The name a depth frame shares with its image (see attach_images).
std::string image_stem_of(const std::string& depth_path) {
  std::string stem = fs::path(depth_path).stem().string();
  for (const std::string suffix : {"_depth", ".depth"})
    if (stem.size() > suffix.size() && stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0)
      return stem.substr(0, stem.size() - suffix.size());
  return stem;
}

}  // namespace

void attach_images(const std::string& folder, RgbdSequence& listing, const std::string& name) {
  std::vector<std::string> images;
  std::map<std::string, std::string> by_stem;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool image = ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".ppm" || ext == ".pgm";
    if (!image || e.path().filename().string()[0] == '.' || !e.is_regular_file(ec)) continue;
    images.push_back(e.path().string());
    by_stem.emplace(e.path().stem().string(), e.path().string());
  }
  if (ec) throw IoError(folder + ": cannot list the folder: " + ec.message());
  const bool all_named = std::all_of(listing.frames.begin(), listing.frames.end(), [&](const RgbdFrame& f) {
    return by_stem.count(image_stem_of(f.depth_path)) > 0;
  });
  if (all_named) {
    for (auto& f : listing.frames) f.rgb_path = by_stem.at(image_stem_of(f.depth_path));
    return;
  }
  if (images.size() != listing.frames.size())
    throw DataError(folder + ": --images holds " + std::to_string(images.size()) + " images for the " +
                    std::to_string(listing.frames.size()) + " depth frames of " + name +
                    ", and not one named after each frame");
  std::sort(images.begin(), images.end());
  for (std::size_t i = 0; i < images.size(); ++i) listing.frames[i].rgb_path = images[i];
}

std::vector<RgbdFrame> frames_in_range(const std::vector<RgbdFrame>& frames, std::size_t first, std::size_t last) {
  std::vector<RgbdFrame> out;
  std::copy_if(frames.begin(), frames.end(), std::back_inserter(out),
               [&](const RgbdFrame& f) { return f.index >= first && f.index < last; });
  return out;
}

ImageU8 read_frame_color(const RgbdFrame& frame, int width, int height) {
  if (frame.rgb_path.empty()) throw DataError(frame.depth_path + ": no colour image is associated with it");
  ImageU8 rgb = read_rgb8(frame.rgb_path);
  if (rgb.width != width || rgb.height != height)
    throw DataError(frame.rgb_path + ": a " + std::to_string(rgb.width) + "x" + std::to_string(rgb.height) +
                    " colour image for a " + std::to_string(width) + "x" + std::to_string(height) + " depth frame");
  return rgb;
}

}  // namespace s3d::io
