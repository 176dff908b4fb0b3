#include "lzf.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace s3d::io::detail {
namespace {

constexpr std::size_t kMaxLiteral = 32;
constexpr std::size_t kMaxOffset = 8192;
constexpr std::size_t kMaxMatch = 264;  // 7 + 255 + 2
constexpr int kHashBits = 14;

}  // namespace

bool lzf_decompress(const std::uint8_t* in, std::size_t size, std::uint8_t* out, std::size_t out_size) {
  std::size_t ip = 0, op = 0;
  while (ip < size) {
    const unsigned ctrl = in[ip++];
    if (ctrl < 32) {
      const std::size_t run = ctrl + 1;
      if (run > size - ip || run > out_size - op) return false;
      std::memcpy(out + op, in + ip, run);
      ip += run;
      op += run;
      continue;
    }
    std::size_t length = ctrl >> 5;
    if (length == 7) {
      if (ip >= size) return false;
      length += in[ip++];
    }
    length += 2;
    if (ip >= size) return false;
    const std::size_t offset = ((ctrl & 31u) << 8 | in[ip++]) + 1;
    if (offset > op || length > out_size - op) return false;
    // Byte by byte: a reference may overlap the bytes it produces (runs).
    for (std::size_t k = 0; k < length; ++k, ++op) out[op] = out[op - offset];
  }
  return op == out_size;
}

std::string lzf_compress(const std::uint8_t* in, std::size_t size) {
  std::string out;
  out.reserve(size + size / 32 + 16);
  std::vector<std::size_t> table(std::size_t{1} << kHashBits, static_cast<std::size_t>(-1));
  std::size_t literal_start = 0, ip = 0;
  auto flush_literals = [&](std::size_t end) {
    while (literal_start < end) {
      const std::size_t run = std::min(kMaxLiteral, end - literal_start);
      out.push_back(static_cast<char>(run - 1));
      out.append(reinterpret_cast<const char*>(in + literal_start), run);
      literal_start += run;
    }
  };
  while (ip + 2 < size) {
    const std::uint32_t key = (std::uint32_t{in[ip]} << 16) | (std::uint32_t{in[ip + 1]} << 8) | in[ip + 2];
    const std::size_t slot = ((key * 2654435761u) >> (32 - kHashBits)) & ((1u << kHashBits) - 1);
    const std::size_t ref = table[slot];
    table[slot] = ip;
    if (ref != static_cast<std::size_t>(-1) && ip - ref <= kMaxOffset && std::memcmp(in + ref, in + ip, 3) == 0) {
      std::size_t length = 3;
      const std::size_t limit = std::min(kMaxMatch, size - ip);
      while (length < limit && in[ref + length] == in[ip + length]) ++length;
      flush_literals(ip);
      const std::size_t offset = ip - ref - 1;
      const std::size_t code = length - 2;
      if (code < 7) {
        out.push_back(static_cast<char>((code << 5) | (offset >> 8)));
      } else {
        out.push_back(static_cast<char>((7u << 5) | (offset >> 8)));
        out.push_back(static_cast<char>(code - 7));
      }
      out.push_back(static_cast<char>(offset & 0xff));
      ip += length;
      literal_start = ip;
      continue;
    }
    ++ip;
  }
  flush_literals(size);
  return out;
}

}  // namespace s3d::io::detail
