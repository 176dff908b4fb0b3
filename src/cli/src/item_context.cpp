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

Tool::Impl::Context::~Context() {
  discard_outputs();
  discard_stdout();
}

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

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

void create_parent(const std::string& target) {
  const fs::path parent = fs::path(target).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec && !fs::is_directory(parent)) {  // another item's writer may have just created it
      throw IoError(parent.string() + ": cannot create the output folder: " + ec.message());
    }
  }
}

}  // namespace

void Tool::Impl::Context::write_naming(const std::string& path, const std::string& tmp,
                                       const std::function<void(const std::string&)>& write) {
  try {
    write(tmp);
  } catch (const IoError& e) {
    throw IoError(replace_all(e.what(), tmp, path));
  } catch (const DataError& e) {
    throw DataError(replace_all(e.what(), tmp, path));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(replace_all(e.what(), tmp, path));
  }
}

std::string Tool::Impl::Context::checked_target(const std::string& path, bool folder) {
  const std::string target = resolve_links(path);
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (!fs::exists(st)) return target;
  if (!folder && fs::is_directory(st))
    throw IoError(path + ": is a folder, not a file (remove it or name another output)");
  if (folder && !fs::is_directory(st)) throw IoError(path + ": exists and is not a folder");
  if (!folder && is_write_through(target)) return target;
  if (!folder && !fs::is_regular_file(st)) throw IoError(path + ": exists and is not a regular file");
  if (!folder && !allow_overwrite_) {
    if (tool_.s.skip_existing) throw SkipItem{};
    throw IoError(path + ": exists (use --overwrite or --skip-existing)");
  }
  return target;
}

bool Tool::Impl::Context::skip_for_existing(const std::vector<std::string>& outs) {
  std::size_t existing = 0;
  std::string first_existing;
  for (const auto& o : outs) {
    if (o == "-" || o.empty()) continue;
    const std::string target = resolve_links(o);
    std::error_code ec;
    const fs::file_status st = fs::status(target, ec);
    if (!fs::exists(st) || is_write_through(target)) continue;
    // A folder is never a finished file output, not even under --skip-existing.
    if (fs::is_directory(st)) throw IoError(o + ": is a folder, not a file (remove it or name another output)");
    if (existing++ == 0) first_existing = o;
  }
  if (existing == 0 || tool_.s.overwrite) return false;
  if (!tool_.s.skip_existing) throw IoError(first_existing + ": exists (use --overwrite or --skip-existing)");
  if (existing == outs.size()) return true;
  allow_overwrite_ = true;  // a partial earlier run: redo the item
  return false;
}

void Tool::Impl::Context::write_atomically(const std::string& path,
                                           const std::function<void(const std::string& tmp)>& write) {
  if (path.empty()) throw InvalidArgument("no output path: give -o PATH|TEMPLATE or --output-dir DIR");
  const bool to_stdout = path == "-";
  std::string target = path;
  Staged::Kind kind = Staged::kFile;
  if (!to_stdout) {
    target = checked_target(path, false);
    if (is_write_through(target))
      kind = Staged::kThrough;
    else
      create_parent(target);
  }
  // `-` and devices: a temp file in $TMPDIR (named with the output's format, for writers that choose by
  // extension), copied to stdout by the frame once the item is complete, in input order, or into the device.
  const std::string fmt = format_of(path, tool_.s);
  std::string temp_target = target;
  if (to_stdout || kind == Staged::kThrough)
    temp_target = (fs::temp_directory_path() / ("s3d-stdout" + (fmt.empty() ? "" : "." + fmt))).string();
  remove_stale_temps(fs::path(temp_target).parent_path().string());
  const std::string tmp = temp_path_for(temp_target);
  detail::register_temp(tmp);
  try {
    write_naming(path, tmp, write);
    std::error_code ec;
    if (!fs::exists(tmp, ec)) throw IoError(path + ": the writer produced no file");
  } catch (...) {
    remove_temp(tmp);
    throw;
  }
  if (to_stdout) {
    stdout_parts_.push_back(tmp);
    written_.push_back(path);
    return;
  }
  staged_.push_back({kind, path, target, tmp});
}

void Tool::Impl::Context::write_folder_atomically(const std::string& path,
                                                  const std::function<void(const std::string& tmp_dir)>& write) {
  if (path.empty() || path == "-") throw InvalidArgument("a folder output needs -o DIR or --output-dir DIR");
  const std::string target = checked_target(path, true);
  create_parent(target);
  remove_stale_temps(fs::path(target).parent_path().string());
  const std::string tmp = temp_path_for(target);
  std::error_code ec;
  if (!fs::create_directory(tmp, ec)) throw IoError(path + ": cannot create a temporary folder: " + ec.message());
  detail::register_temp(tmp);
  try {
    write_naming(path, tmp, write);
  } catch (...) {
    fs::remove_all(tmp, ec);
    detail::unregister_temp(tmp);
    throw;
  }
  staged_.push_back({Staged::kFolder, path, target, tmp});
}

void Tool::Impl::Context::commit_outputs() {
  std::vector<std::string> created;  // removed again when a later rename fails
  // Devices and FIFOs first: a FIFO blocks until its reader comes, and a signal during that wait ends the
  // process; no file of the item may be in place by then (all or nothing).
  std::vector<const Staged*> order;
  for (const Staged& o : staged_)
    if (o.kind == Staged::kThrough) order.push_back(&o);
  for (const Staged& o : staged_)
    if (o.kind != Staged::kThrough) order.push_back(&o);
  try {
    for (const Staged* next : order) {
      const Staged& o = *next;
      std::error_code ec;
      const bool existed = fs::exists(fs::symlink_status(o.target, ec));
      switch (o.kind) {
        case Staged::kThrough: {
          detail::BlockingWait wait;  // a FIFO's open waits for its reader
          write_through(o.tmp, o.target);
          remove_temp(o.tmp);
          break;
        }
        case Staged::kFile:
          try {
            commit_file(o.tmp, o.target, allow_overwrite_);
          } catch (const IoError&) {
            // Another item of this batch wrote the same path first.
            if (!allow_overwrite_ && tool_.s.skip_existing && fs::exists(o.target, ec)) throw SkipItem{};
            throw;
          }
          detail::unregister_temp(o.tmp);
          if (!existed) created.push_back(o.target);
          break;
        case Staged::kFolder:
          commit_folder(o, existed, created);
          break;
      }
    }
    for (const Staged& o : staged_) written_.push_back(o.path);  // in the order the tool wrote them
  } catch (...) {
    for (auto it = created.rbegin(); it != created.rend(); ++it) {
      std::error_code ec;
      fs::remove_all(*it, ec);
    }
    written_.clear();
    discard_outputs();
    throw;
  }
  staged_.clear();
}

void Tool::Impl::Context::commit_folder(const Staged& o, bool existed, std::vector<std::string>& created) {
  std::error_code ec;
  if (!existed) {
    commit_file(o.tmp, o.target, false);
    detail::unregister_temp(o.tmp);
    created.push_back(o.target);
    return;
  }
  // Into an existing folder, file by file: check them all first, so that "exists" moves nothing.
  std::vector<fs::path> files;
  for (fs::directory_iterator it(o.tmp, ec), end; !ec && it != end; it.increment(ec)) files.push_back(it->path());
  if (ec) throw IoError(o.path + ": cannot list the staged folder: " + ec.message());
  if (!allow_overwrite_)
    for (const auto& f : files)
      if (fs::exists(fs::symlink_status(fs::path(o.target) / f.filename(), ec)))
        throw IoError((fs::path(o.path) / f.filename()).string() + ": exists (use --overwrite or --skip-existing)");
  for (const auto& f : files) {
    const std::string to = (fs::path(o.target) / f.filename()).string();
    const bool had = fs::exists(fs::symlink_status(to, ec));
    commit_file(f.string(), to, allow_overwrite_);
    if (!had) created.push_back(to);
  }
  fs::remove_all(o.tmp, ec);
  detail::unregister_temp(o.tmp);
}

void Tool::Impl::Context::discard_outputs() {
  for (const auto& o : staged_) {
    std::error_code ec;
    fs::remove_all(o.tmp, ec);
    detail::unregister_temp(o.tmp);
  }
  staged_.clear();
}

void Tool::Impl::Context::flush_stdout() {
  for (std::size_t i = 0; i < stdout_parts_.size(); ++i) {
    std::ifstream in(stdout_parts_[i], std::ios::binary);
    if (!in) throw IoError("<stdout>: cannot reopen the finished output");
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
