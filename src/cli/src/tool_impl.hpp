#pragma once
// The frame's private parts, shared by tool.cpp (flags, help, config, inputs), item_context.cpp (the
// per-item services) and run_items.cpp (a run: the items through their stages, the records, the summary).
#include <spdlog/logger.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "progress.hpp"
#include "s3d/cli/merge_reports.hpp"
#include "s3d/cli/shard.hpp"
#include "s3d/cli/tool.hpp"

namespace s3d::cli {
namespace detail {

/// An existing output under --skip-existing found while writing: the item is recorded as skipped.
struct SkipItem {};

/// Where an exception lands: the ONE mapping from s3d's exception types to outcomes (docs/CLI.md).
enum class Outcome {
  kUsage,      ///< InvalidArgument and parse errors: exit 2 (before items); during an item, the item fails
  kItem,       ///< IoError, DataError, anything else: the item fails, the batch goes on
  kTransient,  ///< DeviceUnavailable, OutOfMemory, CudaError, bad_alloc: exit 75, stop the batch
};

struct Failure {
  Outcome outcome;
  std::string message;
};

/// Classifies the exception in flight. Frame-internal control types (BrokenPipe, SkipItem) are rethrown.
Failure classify(std::exception_ptr error);

/// The message on one line (newlines become spaces, trailing spaces dropped).
std::string one_line(std::string s);

}  // namespace detail

struct Tool::Impl {
  std::string name;
  std::string summary;
  ItemSpec spec;
  CLI::App app;
  std::vector<std::pair<std::string, std::string>> examples;
  std::string format_description = "output format, overriding the extension (needed with `-o -`)";
  CommonSettings s;
  std::vector<std::function<void(const Device&)>> start_fns;
  std::vector<std::function<void(nlohmann::json&)>> summary_fns;
  std::vector<Aggregate> aggregate_fns;
  OutputsOf outputs_fn;
  ExpandArgument expand_fn;
  std::size_t group_size = 1;    // handle_groups_of(): the handler may take this many items per call
  bool several_devices = false;  // spread_over_devices(): --device may name several GPUs

  // Run state.
  bool quiet_flag = false;
  int verbose_count = 0;
  Device device;                // devices.front()
  std::vector<Device> devices;  // --device, resolved: one, or several GPUs (spread_over_devices)
  std::size_t total_items = 0;  // before --shard
  Shard shard;
  std::string stdin_copy;  // temp file holding stdin, once
  bool stdin_used = false;
  std::exception_ptr stdin_failure;  // the copy failed (empty, unreadable): every later ask fails the same way
  std::mutex stdin_mutex;            // loads of several items may ask for stdin at once
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<detail::Progress> progress;

  Impl(std::string n, std::string sum, ItemSpec sp)
      : name(std::move(n)), summary(std::move(sum)), spec(std::move(sp)), app(summary, name) {}

  void print_error(const std::string& message) {
    if (progress) progress->clear();
    std::fprintf(stderr, "%s: %s\n", name.c_str(), detail::one_line(message).c_str());
    std::fflush(stderr);
  }

  // --help: CLI11 versions differ on how the text ends (2.1: one newline, subcommands two; 2.4+ formats the
  // footer as a paragraph with none): print it with exactly one final newline.
  static void print_help(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    std::cout << text << '\n' << std::flush;
  }

  void add_common_options();
  std::string footer() const;
  nlohmann::json effective_settings() const;
  std::string config_text() const;
  void setup_logging();
  bool show_progress = false;
  std::vector<Item> collect_items();
  void validate_outputs(std::size_t item_count) const;
  /// A usage error when two items (or two outputs of one) would write the same path, as tool.outputs_of
  /// names them, or when an output can never be written (check_output_location). Items whose outputs_of
  /// throws are left to fail when they run.
  void check_collisions(const std::vector<Item>& items);
  std::string copy_stdin();
  std::string copy_stdin_once();
  void remove_temps();
  int run(int argc, char** argv, const detail::ErasedStages& stages);
  /// `TOOL report ...` (argv[0] is "report").
  int run_report(int argc, char** argv);

  class Context;
};

/// The per-item services (ItemContext) the frame gives a tool's stages; one per item, used by one stage at a
/// time.
class Tool::Impl::Context final : public ItemContext {
 public:
  Context(Tool::Impl& tool, const Item& item, bool allow_overwrite)
      : tool_(tool), item_(item), allow_overwrite_(allow_overwrite) {}
  ~Context() override;

  std::string output_path(std::size_t slot, const std::string& default_ext) const override;
  void write_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write) override;
  void write_folder_atomically(const std::string& path,
                               const std::function<void(const std::string& tmp_dir)>& write) override;
  std::string readable_path(const std::string& input) override;
  const Device& device() const override;
  void add_stage_seconds(const std::string& stage, double seconds) override { stage_seconds_[stage] += seconds; }
  void mark_interrupted() override { interrupted_ = true; }
  bool interrupted() const { return interrupted_; }

  /// Decides, before any work, what the existing ones of the item's planned outputs `outs` mean: true =
  /// skip the item (--skip-existing, all exist); some exist under --skip-existing: the item is redone,
  /// replacing them. A character device or FIFO never counts as existing. @throws IoError for an existing
  /// output without --overwrite/--skip-existing, or a folder where a file goes (with any flag).
  bool skip_for_existing(const std::vector<std::string>& outs);
  /// Renames every staged output onto its path, in the order staged. On a failure the outputs this call
  /// created are removed again, the other temps too, and the IoError propagates (outputs it already replaced
  /// under --overwrite stay replaced). @throws IoError, SkipItem (a racing writer under --skip-existing).
  void commit_outputs();
  /// Removes the temps of every staged output (the item failed or was dropped).
  void discard_outputs();
  /// Copies the item's `-` outputs to stdout, in the order written. @throws BrokenPipe, IoError.
  void flush_stdout();
  /// Drops the item's `-` outputs (the item failed after writing them, or was dropped).
  void discard_stdout();
  const std::map<std::string, double>& stage_seconds() const { return stage_seconds_; }
  const std::vector<std::string>& written() const { return written_; }
  void allow_overwrite(bool allow) { allow_overwrite_ = allow; }

 private:
  bool interrupted_ = false;
  const std::string& first_input() const;
  /// The real path an output goes to (links followed), after the checks every output gets (a folder where a
  /// file goes and the reverse, an existing file without --overwrite). @throws IoError, SkipItem.
  std::string checked_target(const std::string& path, bool folder);
  /// Calls `write(tmp)`; an s3d exception whose message names `tmp` is rethrown naming `path`.
  static void write_naming(const std::string& path, const std::string& tmp,
                           const std::function<void(const std::string&)>& write);

  struct Staged {
    enum Kind { kFile, kFolder, kThrough } kind;
    std::string path;    // as the tool named it (records, messages)
    std::string target;  // links followed
    std::string tmp;
  };
  void commit_folder(const Staged& o, bool existed, std::vector<std::string>& created);

  Tool::Impl& tool_;
  const Item& item_;
  bool allow_overwrite_;
  std::vector<std::string> written_;
  std::vector<Staged> staged_;
  std::vector<std::string> stdout_parts_;  // complete `-` outputs waiting for their turn on stdout
  std::map<std::string, double> stage_seconds_;
};

}  // namespace s3d::cli
