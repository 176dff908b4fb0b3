#include "s3d/io/zip.hpp"

#include <array>
#include <cstdint>

#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

std::uint32_t crc32(const std::string& data) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put16(std::string& out, std::uint32_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string& out, std::uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}

constexpr std::uint64_t kZipLimit = 0xFFFFFFFFull;

}  // namespace

std::string zip_stored(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string body, directory;
  for (const auto& member : members) {
    // Named references, not a structured binding: C++17 lambdas cannot capture those (clang refuses).
    const std::string& name = member.first;
    const std::string& data = member.second;
    if (data.size() > kZipLimit || body.size() + 30 + name.size() + data.size() > kZipLimit)
      throw DataError(name + ": the archive would exceed 4 GiB (ZIP without ZIP64)");
    const std::uint32_t crc = crc32(data), size = static_cast<std::uint32_t>(data.size());
    const std::uint32_t offset = static_cast<std::uint32_t>(body.size());
    auto common = [&](std::string& out) {
      put16(out, 20);    // version needed: 2.0
      put16(out, 0);     // flags
      put16(out, 0);     // stored
      put16(out, 0);     // time 00:00
      put16(out, 0x21);  // date 1980-01-01
      put32(out, crc);
      put32(out, size);  // compressed
      put32(out, size);  // uncompressed
      put16(out, static_cast<std::uint32_t>(name.size()));
      put16(out, 0);  // extra
    };
    put32(body, 0x04034b50);
    common(body);
    body += name;
    body += data;
    put32(directory, 0x02014b50);
    put16(directory, 20);  // made by
    common(directory);
    put16(directory, 0);  // comment
    put16(directory, 0);  // disk
    put16(directory, 0);  // internal attributes
    put32(directory, 0);  // external attributes
    put32(directory, offset);
    directory += name;
  }
  if (body.size() + directory.size() > kZipLimit)
    throw DataError(members.back().first + ": the archive would exceed 4 GiB (ZIP without ZIP64)");
  std::string end;
  put32(end, 0x06054b50);
  put16(end, 0);
  put16(end, 0);
  put16(end, static_cast<std::uint32_t>(members.size()));
  put16(end, static_cast<std::uint32_t>(members.size()));
  put32(end, static_cast<std::uint32_t>(directory.size()));
  put32(end, static_cast<std::uint32_t>(body.size()));
  put16(end, 0);
  return body + directory + end;
}

}  // namespace s3d::io
