#include "s3d/cli/output_template.hpp"

#include <array>
#include <string_view>

namespace s3d::cli {
namespace {

// Plain string rules, as GNU parallel applies them: no filesystem access, no normalisation.
std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dirname_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Drops the last extension of the final component; a leading dot (`.hidden`) is not an extension.
std::string without_extension(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const std::size_t start = slash == std::string::npos ? 0 : slash + 1;
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || dot <= start) return path;
  return path.substr(0, dot);
}

constexpr std::array<std::string_view, 6> kPlaceholders{"{}", "{/}", "{.}", "{/.}", "{//}", "{#}"};

}  // namespace

bool has_placeholder(const std::string& text) {
  for (auto p : kPlaceholders)
    if (text.find(p) != std::string::npos) return true;
  return false;
}

std::string expand_template(const std::string& templ, const std::string& input, std::size_t number) {
  const std::string path = input == "-" ? std::string("stdin") : input;
  std::string out;
  out.reserve(templ.size() + path.size());
  std::size_t i = 0;
  while (i < templ.size()) {
    const std::string_view rest(templ.data() + i, templ.size() - i);
    if (rest.rfind("{}", 0) == 0) {
      out += path;
      i += 2;
    } else if (rest.rfind("{/}", 0) == 0) {
      out += basename_of(path);
      i += 3;
    } else if (rest.rfind("{.}", 0) == 0) {
      out += without_extension(path);
      i += 3;
    } else if (rest.rfind("{/.}", 0) == 0) {
      out += without_extension(basename_of(path));
      i += 4;
    } else if (rest.rfind("{//}", 0) == 0) {
      out += dirname_of(path);
      i += 4;
    } else if (rest.rfind("{#}", 0) == 0) {
      out += std::to_string(number);
      i += 3;
    } else {
      out += templ[i];
      ++i;
    }
  }
  return out;
}

}  // namespace s3d::cli
