#pragma once
// Shared by the fuzz targets: the bytes of one input as a file (for parsers that take only a path), and the
// one place that decides which exceptions are a parser's documented answer to bad input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "s3d/core/errors.hpp"

namespace s3d::fuzz {

// One folder per process (libFuzzer's -jobs/-fork run several), removed at exit.
inline const std::string& temp_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/s3d-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) std::abort();
    static const std::string removed_at_exit = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removed_at_exit, ec);
    });
    return tmpl;
  }();
  return dir;
}

// Writes the input to `<temp_dir>/<name>` (the name's extension picks the reader where it matters).
inline std::string write_temp(const std::uint8_t* data, std::size_t size, const std::string& name) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();
  return path;
}

// Runs `parse`; the s3d exceptions a parser documents for bad input end the run quietly, anything else
// (std::bad_alloc, std::out_of_range, a foreign exception) escapes and libFuzzer reports it as a crash.
template <typename Fn>
void expect_parsed_or_rejected(Fn&& parse) {
  try {
    parse();
  } catch (const s3d::IoError&) {
  } catch (const s3d::DataError&) {
  } catch (const s3d::InvalidArgument&) {
  }
}

}  // namespace s3d::fuzz
