#pragma once
// Text from a file, shown in a message.
#include <string>
#include <string_view>

namespace s3d::io::detail {

/// `text` in single quotes, bytes outside printable ASCII as \xNN, cut after 60 characters (then `...`):
/// a binary header or a long line never reaches a terminal raw.
inline std::string quoted(std::string_view text) {
  constexpr std::size_t kShown = 60;
  static const char* const kHex = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (text.size() > kShown) out += "...";
  return out + "'";
}

}  // namespace s3d::io::detail
