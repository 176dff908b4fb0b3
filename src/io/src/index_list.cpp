#include "s3d/io/index_list.hpp"

namespace s3d::io {

std::string index_list_text(const std::vector<std::int32_t>& indices) {
  std::string text;
  text.reserve(indices.size() * 8);
  for (std::int32_t i : indices) text += std::to_string(i) + "\n";
  return text;
}

}  // namespace s3d::io
