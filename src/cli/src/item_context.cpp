#include <filesystem>
#include <fstream>

#include "s3d/cli/atomic_file.hpp"
#include "s3d/cli/output_template.hpp"
#include "s3d/core/errors.hpp"
#include "signals.hpp"
#include "tool_impl.hpp"

namespace fs = std::filesystem;

namespace s3d::cli {
namespace {

void remove_temp(const std::string& tmp) {
  std::error_code ec;
  fs::remove(tmp, ec);
  detail::unregister_temp(tmp);
}

}  // namespace

using detail::SkipItem;

Tool::Impl::Context::~Context() { discard_stdout(); }

std::string Tool::Impl::Context::output_path(std::size_t slot, const std::string& default_ext) const {
  const CommonSettings& s = tool_.s;
  std::string path;
  if (slot < s.outputs.size()) {
    const std::string& o = s.outputs[slot];
    if (o == "-") return o;
    path = has_placeholder(o) ? expand_template(o, first_input(), item_.index + 1) : o;
  } else if (!s.output_dir.empty()) {
    path = expand_template("{/.}", first_input(), item_.index + 1) + default_ext;
  } else {
    return "";  // this slot was not asked for
  }
  if (!s.output_dir.empty() && fs::path(path).is_relative()) path = (fs::path(s.output_dir) / path).string();
  return path;
}

void Tool::Impl::Context::write_atomically(const std::string& path,
                                           const std::function<void(const std::string& tmp)>& write) {
  if (path.empty()) throw InvalidArgument("no output path: give -o PATH|TEMPLATE or --output-dir DIR");
  const bool to_stdout = path == "-";
  if (!to_stdout) {
    std::error_code ec;
    if (fs::exists(path, ec) && !allow_overwrite_) {
      if (tool_.s.skip_existing) throw SkipItem{};
      throw IoError(path + ": exists (use --overwrite or --skip-existing)");
    }
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec)) {
      fs::create_directories(parent, ec);
      if (ec && !fs::is_directory(parent)) {  // another item's writer may have just created it
        throw IoError(parent.string() + ": cannot create the output folder: " + ec.message());
      }
    }
  }
  // `-`: a temp file (named with --format's extension, for writers that choose by extension), copied to
  // stdout by the frame once the item is complete, in input order.
  const std::string fmt = format_of(path, tool_.s);
  const std::string target =
      to_stdout ? (fs::temp_directory_path() / ("s3d-stdout" + (fmt.empty() ? "" : "." + fmt))).string() : path;
  const std::string tmp = temp_path_for(target);
  detail::register_temp(tmp);
  try {
    write(tmp);
    std::error_code ec;
    if (!fs::exists(tmp, ec)) throw IoError(path + ": the writer produced no file");
    if (to_stdout) {
      stdout_parts_.push_back(tmp);
      written_.push_back(path);
      return;
    }
    try {
      commit_file(tmp, path, allow_overwrite_);
    } catch (const IoError&) {
      // Another item of this batch wrote the same path first.
      if (!allow_overwrite_ && tool_.s.skip_existing && fs::exists(path, ec)) throw SkipItem{};
      throw;
    }
  } catch (...) {
    remove_temp(tmp);
    throw;
  }
  detail::unregister_temp(tmp);
  written_.push_back(path);
}

void Tool::Impl::Context::flush_stdout() {
  for (std::size_t i = 0; i < stdout_parts_.size(); ++i) {
    std::ifstream in(stdout_parts_[i], std::ios::binary);
    if (!in) throw IoError(stdout_parts_[i] + ": cannot reopen the temporary output");
    std::fflush(stdout);
    char buf[1 << 16];
    while (in) {
      in.read(buf, sizeof buf);
      if (in.gcount() > 0) detail::write_stdout(buf, static_cast<std::size_t>(in.gcount()));
    }
  }
  discard_stdout();
}

void Tool::Impl::Context::discard_stdout() {
  for (const auto& tmp : stdout_parts_) remove_temp(tmp);
  stdout_parts_.clear();
}

std::string Tool::Impl::Context::readable_path(const std::string& input) {
  return input == "-" ? tool_.copy_stdin() : input;
}

const Device& Tool::Impl::Context::device() const { return tool_.device; }

const std::string& Tool::Impl::Context::first_input() const {
  static const std::string kNone;
  return item_.inputs.empty() ? kNone : item_.inputs.front();
}

}  // namespace s3d::cli
