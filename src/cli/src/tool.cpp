#include "s3d/cli/tool.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "completion.hpp"
#include "ordered_stages.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "s3d/cli/atomic_file.hpp"
#include "s3d/cli/inputs.hpp"
#include "s3d/cli/output_template.hpp"
#include "s3d/cli/shard.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/parallel.hpp"
#include "signals.hpp"
#include "versions.hpp"
#include "worker_pool.hpp"

namespace fs = std::filesystem;

namespace s3d::cli {

std::string format_of(const std::string& path, const CommonSettings& settings) {
  std::string f = settings.format;
  if (f.empty() && path != "-") f = fs::path(path).extension().string();
  if (!f.empty() && f[0] == '.') f.erase(0, 1);
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return f;
}

namespace {

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
Failure classify(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const detail::BrokenPipe&) {
    throw;
  } catch (const SkipItem&) {
    throw;
  } catch (const DeviceUnavailable& e) {
    return {Outcome::kTransient, e.what()};
  } catch (const OutOfMemory& e) {
    return {Outcome::kTransient, e.what()};
  } catch (const CudaError& e) {
    return {Outcome::kTransient, e.what()};
  } catch (const std::bad_alloc&) {
    return {Outcome::kTransient, "out of memory"};
  } catch (const InvalidArgument& e) {
    return {Outcome::kUsage, e.what()};
  } catch (const CLI::Error& e) {
    return {Outcome::kUsage, e.what()};
  } catch (const IoError& e) {
    return {Outcome::kItem, e.what()};
  } catch (const DataError& e) {
    return {Outcome::kItem, e.what()};
  } catch (const std::exception& e) {
    return {Outcome::kItem, e.what()};
  } catch (...) {
    return {Outcome::kItem, "unknown error"};
  }
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// `on (runtime R, archs A)` or `off`, whichever way s3d::cuda_build_info() words it.
std::string cuda_line() {
  if (!cuda_built()) return "off";
  const std::string info = cuda_build_info();
  return info.rfind("on", 0) == 0 ? info : "on (" + info + ")";
}

std::string version_text(const std::string& tool) {
  std::ostringstream os;
  os << tool << " " << S3D_VERSION << "\n"
     << "git: " << S3D_GIT_SHA << "\n"
     << "cuda: " << cuda_line() << "\n"
     << "opencv: " << detail::opencv_version() << "\n"
     << "pcl: " << detail::pcl_version() << "\n";
  return os.str();
}

// A flag's value from one of its CLI11 results: `true`/`false`, a count, `on`/`off`... (an empty or
// unreadable result counts as given).
std::int64_t flag_value(const std::string& result) {
  if (result.empty()) return 1;
  try {
    return CLI::detail::to_flag_value(result);
  } catch (const std::exception&) {
    return 1;
  }
}

// The value --print-config writes for a flag: a count for counting flags (-vv: 2), else true/false.
std::string flag_text(const CLI::Option& opt) {
  const auto& results = opt.results();
  if (opt.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll) {
    std::int64_t n = 0;
    for (const auto& r : results) n += flag_value(r);
    return std::to_string(std::max<std::int64_t>(n, 0));
  }
  return !results.empty() && flag_value(results.back()) > 0 ? "true" : "false";
}

// --config's reader: CLI11's TOML/INI reader, less the flags set to false (or 0). CLI11 counts a flag read
// from a config as given even when it is false, which trips exclusions (--overwrite/--skip-existing,
// -q/-v, a tool's --x/--no-x); a false flag in a config means the flag is not given.
class ConfigReader final : public CLI::ConfigBase {
 public:
  explicit ConfigReader(const CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> items = CLI::ConfigBase::from_config(input);
    items.erase(std::remove_if(items.begin(), items.end(), [this](const CLI::ConfigItem& i) { return false_flag(i); }),
                items.end());
    return items;
  }

 private:
  bool false_flag(const CLI::ConfigItem& item) const {
    if (item.inputs.size() != 1 || item.name == "++" || item.name == "--") return false;
    const CLI::App* app = &app_;
    try {
      for (const auto& parent : item.parents) app = app->get_subcommand(parent);
    } catch (const CLI::Error&) {
      return false;  // CLI11 reports it
    }
    // Looked up as CLI11 does (`--name`, `-n`, then the bare name).
    const CLI::Option* opt = app->get_option_no_throw("--" + item.name);
    if (!opt && item.name.size() == 1) opt = app->get_option_no_throw("-" + item.name);
    if (!opt) opt = app->get_option_no_throw(item.name);
    if (!opt || !opt->get_configurable() || opt->get_expected_min() != 0 || opt->get_expected_max() != 0) return false;
    return flag_value(item.inputs.front()) <= 0;
  }

  const CLI::App& app_;
};

}  // namespace

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
  OutputsOf outputs_fn;
  ExpandArgument expand_fn;

  // Run state.
  bool quiet_flag = false;
  int verbose_count = 0;
  Device device;
  std::size_t total_items = 0;  // before --shard
  std::string stdin_copy;       // temp file holding stdin, once
  bool stdin_used = false;
  std::mutex stdin_mutex;  // loads of several items may ask for stdin at once
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<detail::Progress> progress;

  Impl(std::string n, std::string sum, ItemSpec sp)
      : name(std::move(n)), summary(std::move(sum)), spec(std::move(sp)), app(summary, name) {}

  void print_error(const std::string& message) {
    if (progress) progress->clear();
    std::fprintf(stderr, "%s: %s\n", name.c_str(), one_line(message).c_str());
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
  std::string copy_stdin();
  void remove_temps();
  int run(int argc, char** argv, const detail::ErasedStages& stages);

  class Context;
};

// ---------------------------------------------------------------------------------------------------------
// Per-item services.

class Tool::Impl::Context final : public ItemContext {
 public:
  Context(Tool::Impl& tool, const Item& item, bool allow_overwrite)
      : tool_(tool), item_(item), allow_overwrite_(allow_overwrite) {}

  std::string output_path(std::size_t slot, const std::string& default_ext) const override {
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

  void write_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write) override {
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

  ~Context() override { discard_stdout(); }

  /// Copies the item's `-` outputs to stdout, in the order written. @throws BrokenPipe, IoError.
  void flush_stdout() {
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

  /// Drops the item's `-` outputs (the item failed after writing them, or was dropped).
  void discard_stdout() {
    for (const auto& tmp : stdout_parts_) remove_temp(tmp);
    stdout_parts_.clear();
  }

  void add_stage_seconds(const std::string& stage, double seconds) override { stage_seconds_[stage] += seconds; }
  const std::map<std::string, double>& stage_seconds() const { return stage_seconds_; }

  std::string readable_path(const std::string& input) override { return input == "-" ? tool_.copy_stdin() : input; }

  const Device& device() const override { return tool_.device; }

  const std::vector<std::string>& written() const { return written_; }
  void allow_overwrite(bool allow) { allow_overwrite_ = allow; }

 private:
  const std::string& first_input() const {
    static const std::string kNone;
    return item_.inputs.empty() ? kNone : item_.inputs.front();
  }

  static void remove_temp(const std::string& tmp) {
    std::error_code ec;
    fs::remove(tmp, ec);
    detail::unregister_temp(tmp);
  }

  Tool::Impl& tool_;
  const Item& item_;
  bool allow_overwrite_;
  std::vector<std::string> written_;
  std::vector<std::string> stdout_parts_;  // complete `-` outputs waiting for their turn on stdout
  std::map<std::string, double> stage_seconds_;
};

// ---------------------------------------------------------------------------------------------------------

void Tool::Impl::add_common_options() {
  const char* io_group = "Input and output";
  const char* common = "Common options";
  CommonSettings& st = s;

  const std::string per_item = spec.inputs_per_item == 1
                                   ? std::string("input files (`-` = stdin)")
                                   : "input files, " + std::to_string(spec.inputs_per_item) + " per item (`-` = stdin)";
  app.add_option("inputs", st.positional, per_item)->type_name("FILE")->group(io_group);
  app.add_option("-o,--output", st.outputs,
                 "output path, or a name template with {} {/} {.} {/.} {//} {#}; `-` = stdout; repeat for each "
                 "output the tool writes")
      ->type_name("PATH")
      ->allow_extra_args(false)
      ->group(io_group);
  app.add_option("--output-dir", st.output_dir, "folder for the outputs (created if missing)")
      ->type_name("DIR")
      ->group(io_group);
  app.add_option("--input-list", st.input_list, "read inputs from FILE (`-` = stdin), one item per line")
      ->type_name("FILE")
      ->group(io_group);
  app.add_option("--manifest", st.manifest, "read items from a JSON Lines manifest (`-` = stdin)")
      ->type_name("FILE")
      ->group(io_group);
  app.add_option("--format", st.format, format_description)->type_name("FMT")->group(io_group);
  auto* overwrite = app.add_flag("--overwrite", st.overwrite, "replace existing outputs")->group(io_group);
  app.add_flag("--skip-existing", st.skip_existing, "skip items whose outputs exist (resume a batch)")
      ->excludes(overwrite)
      ->group(io_group);
  app.add_option("--shard", st.shard, "process items k with k mod n == i (i/n), or `auto` (Slurm array, k8s index)")
      ->type_name("i/n|auto")
      ->group(io_group);
  app.add_option("--shard-count", st.shard_count, "shard count for `--shard auto` with JOB_COMPLETION_INDEX")
      ->type_name("N")
      ->check(CLI::PositiveNumber)
      ->group(io_group);
  app.add_flag("--fail-fast", st.fail_fast, "stop at the first failed item")->group(io_group);

  app.add_option("--device", st.device, "compute device: auto (GPU, else CPU with a warning), cpu, cuda[:N]")
      ->type_name("auto|cpu|cuda[:N]")
      ->capture_default_str()
      ->group(common);
  app.add_option("--threads", st.threads, "CPU threads (0 = all cores)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(common);
  app.add_option("--prefetch", st.prefetch,
                 "items in flight at most: read ahead, being processed or written (0 = twice the worker threads, "
                 "which are --threads)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(common);
  app.add_flag("--json", st.json, "JSON Lines on stdout: one record per item, then a summary")->group(common);
  app.add_option("--report", st.report_path, "write the JSON Lines records to FILE")->type_name("FILE")->group(common);
  app.add_option("--progress", st.progress, "progress bar on stderr")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str()
      ->group(common);
  auto* quiet = app.add_flag("-q,--quiet", quiet_flag, "only errors on stderr")->group(common);
  app.add_flag_function(
         "-v,--verbose", [this](std::int64_t count) { verbose_count = static_cast<int>(count); },
         "more log on stderr (-vv: debug)")
      ->excludes(quiet)
      ->group(common);
  app.config_formatter(std::make_shared<ConfigReader>(app));
  app.set_config("--config", "", "read settings from a TOML/INI file (keys = long flag names); flags override it")
      ->type_name("FILE")
      ->group(common);
  app.add_flag_callback(
         "--print-config",
         [this] {
           std::cout << config_text() << std::flush;
           throw CLI::Success();
         },
         "print the effective settings (TOML, usable with --config) and exit")
      ->configurable(false)
      ->group(common);
  app.add_option_function<std::string>(
         "--generate-completion",
         [this](const std::string& shell) {
           std::cout << detail::completion_script(app, shell) << std::flush;
           throw CLI::Success();
         },
         "print a completion script for bash, zsh or fish and exit")
      ->check(CLI::IsMember({"bash", "zsh", "fish"}))
      ->type_name("SHELL")
      ->configurable(false)
      ->group(common);
  app.add_flag_callback(
         "--version",
         [this] {
           std::cout << version_text(name) << std::flush;
           throw CLI::Success();
         },
         "print the version, build and library information and exit")
      ->configurable(false)
      ->group(common);
  app.footer(footer());
  // Tools with subcommands (`pc-sample fps -n 4096 scan.ply -o out.ply`): the common options and the inputs
  // may follow the subcommand, so let subcommands pass what they do not know to the frame's app.
  std::function<void(CLI::App&)> fall_through = [&](CLI::App& a) {
    for (CLI::App* sub : a.get_subcommands([](CLI::App*) { return true; })) {
      sub->fallthrough();
      fall_through(*sub);
    }
  };
  fall_through(app);
}

std::string Tool::Impl::footer() const {
  std::ostringstream os;
  os << "Exit codes:\n"
     << "  0    every item succeeded (or was skipped)\n"
     << "  1    one or more items failed; the others were processed\n"
     << "  2    usage or configuration error\n"
     << "  75   transient, retry elsewhere: no GPU for --device cuda, out of GPU memory, CUDA context lost\n"
     << "  130  interrupted (SIGINT)\n"
     << "  143  terminated (SIGTERM)\n";
  if (!examples.empty()) {
    os << "\nExamples:\n";
    for (const auto& [command, what] : examples) os << "  " << command << "\n      " << what << "\n";
  }
  std::string text = os.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();  // print_help ends the text with one newline
  return text;
}

namespace {

// The options of `app` with a value, as JSON: flags as booleans, numbers as numbers, the rest as strings;
// unset options without a default are left out. Keys are long names (else the short name).
nlohmann::json options_json(const CLI::App& app) {
  auto typed = [](const std::string& v) -> nlohmann::json {
    static const std::regex kNumber("-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?");
    if (std::regex_match(v, kNumber)) return nlohmann::json::parse(v, nullptr, false);
    return v;
  };
  nlohmann::json out = nlohmann::json::object();
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->get_configurable() || opt->get_positional()) continue;
    const std::string key = !opt->get_lnames().empty()   ? opt->get_lnames().front()
                            : !opt->get_snames().empty() ? opt->get_snames().front()
                                                         : std::string();
    if (key.empty() || key == "help" || key == "h" || key == "config") continue;
    if (opt->get_expected_max() == 0) {  // a flag
      out[key] = opt->count() > 0;
      continue;
    }
    const auto& results = opt->results();
    if (results.empty()) {
      if (!opt->get_default_str().empty()) out[key] = typed(opt->get_default_str());
    } else if (opt->get_items_expected_max() > 1) {
      out[key] = nlohmann::json::array();
      for (const auto& r : results) out[key].push_back(typed(r));
    } else {
      out[key] = typed(results.back());
    }
  }
  return out;
}

}  // namespace

nlohmann::json Tool::Impl::effective_settings() const {
  nlohmann::json out = options_json(app);
  // A subcommand's options under its name: {"fps": {"n": 4096}}.
  std::function<void(const CLI::App&, nlohmann::json&)> subs = [&](const CLI::App& a, nlohmann::json& into) {
    for (const CLI::App* sub : a.get_subcommands()) {
      nlohmann::json j = options_json(*sub);
      subs(*sub, j);
      into[sub->get_name()] = std::move(j);
    }
  };
  subs(app, out);
  if (const CLI::Option* config = app.get_config_ptr(); config && config->count() > 0)
    out["config"] = config->as<std::string>();
  // The inputs are not settings (a batch may list 100k files): only where they came from.
  out["inputs_from"] = !s.manifest.empty() ? "manifest" : !s.input_list.empty() ? "input-list" : "arguments";
  return out;
}

// TOML that --config reads back: options with a value (given, from a config, or a non-empty default);
// the inputs are not settings and are left out.
std::string Tool::Impl::config_text() const {
  auto value = [](const std::string& v) {
    static const std::regex kBare("-?[0-9]+(\\.[0-9]+)?|true|false");
    if (std::regex_match(v, kBare)) return v;
    std::string q = "\"";
    for (char c : v) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return q + "\"";
  };
  std::ostringstream os;
  os << "# " << name << " " << S3D_VERSION << ": effective settings (read back with --config FILE)\n";
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->get_configurable() || opt->get_lnames().empty()) continue;
    const std::string key = opt->get_lnames().front();
    if (key == "help" || key == "config") continue;
    if (opt->get_expected_max() == 0) {
      // Every flag, on or off (ConfigReader reads `=false` back as "not given").
      os << key << "=" << flag_text(*opt) << "\n";
      continue;
    }
    const auto& results = opt->results();
    if (results.empty()) {
      if (!opt->get_default_str().empty()) os << key << "=" << value(opt->get_default_str()) << "\n";
    } else if (opt->get_items_expected_max() > 1) {
      os << key << "=[";
      for (std::size_t i = 0; i < results.size(); ++i) os << (i ? ", " : "") << value(results[i]);
      os << "]\n";
    } else {
      os << key << "=" << value(results.back()) << "\n";
    }
  }
  return os.str();
}

void Tool::Impl::setup_logging() {
  s.verbosity = quiet_flag ? -1 : std::max(verbose_count, 0);
  show_progress = s.progress == "always" || (s.progress == "auto" && s.verbosity >= 0 && detail::stderr_is_terminal());
  log = detail::make_stderr_logger(name, detail::stderr_wants_color(), nullptr);
  spdlog::level::level_enum level = spdlog::level::warn;
  if (s.verbosity < 0) level = spdlog::level::err;
  if (s.verbosity == 1) level = spdlog::level::info;
  if (s.verbosity >= 2) level = spdlog::level::debug;
  log->set_level(level);
  spdlog::set_default_logger(log);  // tools log with spdlog::info(...) etc.
}

std::vector<Item> Tool::Impl::collect_items() {
  const int sources = !s.positional.empty() + !s.input_list.empty() + !s.manifest.empty();
  if (sources == 0) throw InvalidArgument("no input: give FILE..., --input-list FILE or --manifest FILE");
  if (sources > 1) throw InvalidArgument("give inputs one way: positional files, --input-list or --manifest");
  int stdin_readers = (s.input_list == "-") + (s.manifest == "-");
  for (const auto& p : s.positional) stdin_readers += p == "-";
  if (stdin_readers > 1) throw InvalidArgument("`-` (stdin) can be used only once");

  auto from_stream = [&](const std::string& path, auto parse) {
    if (path == "-") {
      stdin_used = true;
      return parse(std::cin, std::string("<stdin>"));
    }
    std::ifstream in(path);
    if (!in) throw InvalidArgument(path + ": cannot open");
    return parse(in, path);
  };
  if (!s.input_list.empty())
    return from_stream(s.input_list,
                       [&](std::istream& in, const std::string& src) { return items_from_list(in, src, spec); });
  if (!s.manifest.empty())
    return from_stream(s.manifest,
                       [&](std::istream& in, const std::string& src) { return items_from_manifest(in, src, spec); });
  return items_from_paths(s.positional, spec, expand_fn);
}

void Tool::Impl::validate_outputs(std::size_t item_count) const {
  for (const auto& o : s.outputs) {
    if (o.empty()) throw InvalidArgument("-o: empty path");
    if (o != "-" && !has_placeholder(o) && item_count > 1)
      throw InvalidArgument("-o " + o + " names one file but there are " + std::to_string(item_count) +
                            " items: use a template such as '{/.}.png' or --output-dir");
  }
  const bool data_on_stdout = std::find(s.outputs.begin(), s.outputs.end(), "-") != s.outputs.end();
  if (data_on_stdout && s.json && s.report_path.empty())
    throw InvalidArgument("--json with -o -: stdout carries the data; write the records with --report FILE");
}

std::string Tool::Impl::copy_stdin() {
  std::lock_guard<std::mutex> lock(stdin_mutex);
  if (!stdin_copy.empty()) return stdin_copy;
  if (stdin_used) throw InvalidArgument("`-` (stdin) was already read as a list or manifest");
  const std::string target = (fs::temp_directory_path() / "s3d-stdin").string();
  const std::string tmp = temp_path_for(target);
  detail::register_temp(tmp);
  std::ofstream out(tmp, std::ios::binary);
  if (!out) throw IoError(tmp + ": cannot create a temporary file for stdin");
  out << std::cin.rdbuf();
  out.close();
  if (!out) throw IoError(tmp + ": cannot write stdin to a temporary file");
  stdin_copy = tmp;
  return stdin_copy;
}

void Tool::Impl::remove_temps() {
  if (!stdin_copy.empty()) {
    std::error_code ec;
    fs::remove(stdin_copy, ec);
    detail::unregister_temp(stdin_copy);
    stdin_copy.clear();
  }
}

int Tool::Impl::run(int argc, char** argv, const detail::ErasedStages& stages) {
  using Clock = std::chrono::steady_clock;
  const auto batch_start = Clock::now();
  detail::install_signal_handlers();
  add_common_options();

  // 1. Parse. Help/--version/--print-config/--generate-completion exit 0 from here.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    print_help(app.help());
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    print_help(app.help("", CLI::AppFormatMode::All));
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, std::cout, std::cerr);
    print_error("error: " + std::string(e.what()) + " (see --help)");
    return kExitUsage;
  }
  setup_logging();
  if (s.report_path == "-") {  // `--report -` is --json
    s.report_path.clear();
    s.json = true;
  }

  // 2. Everything before the first item: a failure here is a usage error (2) or transient (75).
  std::vector<Item> items;
  std::optional<detail::Records> records;
  try {
    const Shard shard = parse_shard(s.shard, s.shard_count);
    const Device requested = Device::parse(s.device);
    std::vector<Item> all = collect_items();
    total_items = all.size();
    validate_outputs(all.size());
    items = select_shard(all, shard);
    bool fell_back = false;
    device = resolve_device(requested, &fell_back);
    if (fell_back)
      log->warn(cuda_built() ? "no CUDA device visible: running on the CPU"
                             : "this build has no CUDA support: running on the CPU");
    log->info("device: {}", describe_device(device));
    set_cpu_threads(s.threads);
    for (auto& fn : start_fns) fn(device);
    const bool data_on_stdout = std::find(s.outputs.begin(), s.outputs.end(), "-") != s.outputs.end();
    records.emplace(s.json && !data_on_stdout, s.report_path);
    if (shard.count > 1) log->info("shard {}/{}: {} of {} items", shard.index, shard.count, items.size(), all.size());
  } catch (const detail::BrokenPipe&) {
    throw;
  } catch (...) {
    const Failure f = classify(std::current_exception());
    print_error("error: " + f.message);
    remove_temps();
    return f.outcome == Outcome::kTransient ? kExitTransient : kExitUsage;
  }

  // 3. The items. Per-item failures are recorded and the batch goes on (unless --fail-fast).
  std::size_t ok = 0, failed = 0, skipped = 0, done = 0;
  int exit_code = kExitOk;
  progress = std::make_unique<detail::Progress>(show_progress, items.size());
  log = detail::make_stderr_logger(name, detail::stderr_wants_color(), progress.get());
  log->set_level(spdlog::default_logger()->level());
  spdlog::set_default_logger(log);

  // Per item: its state from load to emit. Each stage runs alone on the item (see ordered_stages.hpp).
  struct ItemRun {
    std::unique_ptr<Context> ctx;
    nlohmann::json record = nlohmann::json::object();
    detail::Erased input, output;
    std::optional<Failure> failure;
    bool skipped = false;
    Clock::time_point start;
  };
  std::vector<ItemRun> runs(items.size());
  std::map<std::string, double> stage_totals;
  double handle_seconds = 0.0;
  bool stop = false;  // --fail-fast or a transient error: handle no more items

  auto base_record = [&](const Item& item) {
    nlohmann::json r = nlohmann::json::object();
    r["type"] = "item";
    r["index"] = item.index;
    r["input"] = item.inputs.empty() ? std::string() : item.inputs.front();
    if (item.inputs.size() > 1) r["inputs"] = item.inputs;
    return r;
  };
  // Runs one stage of an item, turning what it throws into the item's outcome.
  auto guarded = [&](ItemRun& run, const std::function<void()>& stage) {
    try {
      stage();
    } catch (const SkipItem&) {
      run.skipped = true;
    } catch (const detail::BrokenPipe&) {
      run.failure = Failure{Outcome::kItem, "<stdout>: broken pipe"};  // the emit of this item stops the batch
    } catch (...) {
      run.failure = classify(std::current_exception());
    }
  };
  auto settled = [](const ItemRun& run) { return run.skipped || run.failure.has_value(); };

  detail::OrderedStageCallbacks cb;
  cb.load = [&](std::size_t k) {
    ItemRun& run = runs[k];
    const Item& item = items[k];
    run.start = Clock::now();
    run.record = base_record(item);
    run.ctx = std::make_unique<Context>(*this, item, s.overwrite);
    guarded(run, [&] {
      // Existing outputs are decided before any work when the tool says what it will write.
      if (outputs_fn) {
        const std::vector<std::string> outs = outputs_fn(item, *run.ctx);
        std::size_t existing = 0;
        std::string first_existing;
        for (const auto& o : outs) {
          std::error_code ec;
          if (o != "-" && !o.empty() && fs::exists(o, ec)) {
            if (existing++ == 0) first_existing = o;
          }
        }
        if (existing > 0 && !s.overwrite) {
          if (!s.skip_existing) throw IoError(first_existing + ": exists (use --overwrite or --skip-existing)");
          if (existing == outs.size()) throw SkipItem{};
          run.ctx->allow_overwrite(true);  // a partial earlier run: redo the item
        }
        if (!outs.empty()) run.record["output"] = outs.front();
      }
      if (stages.load) run.input = stages.load(item, *run.ctx);
    });
  };
  cb.handle = [&](std::size_t k, bool next_loaded) {
    ItemRun& run = runs[k];
    const Item& item = items[k];
    if (!settled(run)) {
      log->debug("item {}: {}", item.index + 1, item.name());
      const Item* next = nullptr;
      detail::Erased* next_input = nullptr;
      if (next_loaded && !settled(runs[k + 1])) {
        next = &items[k + 1];
        next_input = &runs[k + 1].input;
      }
      const auto t0 = Clock::now();
      guarded(run, [&] { run.output = stages.handle(item, run.input, *run.ctx, next, next_input); });
      handle_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    run.input.reset();
    // Known here: a failure of this item's load or handle. A failure of its write stops the batch at emit.
    if (run.failure && (run.failure->outcome == Outcome::kTransient || s.fail_fast)) stop = true;
    return !stop;
  };
  // The write stage, and the record fields it and the tool give.
  auto write_item = [&](ItemRun& run, const Item& item) {
    guarded(run, [&] {
      nlohmann::json fields =
          stages.write ? stages.write(item, run.output, *run.ctx) : *static_cast<nlohmann::json*>(run.output.get());
      if (fields.is_object())
        for (auto it = fields.begin(); it != fields.end(); ++it) run.record[it.key()] = it.value();
      const auto& written = run.ctx->written();
      if (!written.empty()) {
        if (!fields.is_object() || !fields.contains("output")) run.record["output"] = written.front();
        if (written.size() > 1 && (!fields.is_object() || !fields.contains("outputs"))) run.record["outputs"] = written;
      }
    });
  };
  cb.finish = [&](std::size_t k) {
    ItemRun& run = runs[k];
    if (!settled(run)) write_item(run, items[k]);
    run.output.reset();
    run.record["seconds"] = std::chrono::duration<double>(Clock::now() - run.start).count();
  };
  cb.emit = [&](std::size_t k) {
    ItemRun& run = runs[k];
    const Item& item = items[k];
    std::unique_ptr<Context> ctx = std::move(run.ctx);    // its `-` outputs go now or never
    if (run.failure && detail::pending_signal()) return;  // dropped by the interrupt: no record
    std::string status = run.skipped ? "skipped" : "ok";
    if (!run.failure) {
      try {
        ctx->flush_stdout();
      } catch (const detail::BrokenPipe&) {
        throw;
      } catch (...) {
        run.failure = classify(std::current_exception());
      }
    }
    if (run.failure) {
      status = "failed";
      run.record["error"] = one_line(run.failure->message);
      // One line naming the file, unless the message already starts with one of the item's paths or with
      // its display name (`<stdin>` for `-`).
      const std::string& m = run.failure->message;
      bool named = m.rfind(item.name() + ":", 0) == 0;
      for (const auto& in : item.inputs) named = named || m.rfind(in + ":", 0) == 0;
      print_error(named ? m : item.name() + ": " + m);
    }
    if (!ctx->stage_seconds().empty() && status == "ok") {
      run.record["stage_seconds"] = ctx->stage_seconds();
      for (const auto& [stage, secs] : ctx->stage_seconds()) stage_totals[stage] += secs;
    }
    run.record["status"] = status;
    if (status == "ok") ++ok;
    if (status == "skipped") ++skipped;
    if (status == "failed") ++failed;
    records->write(run.record);
    run.record = nlohmann::json();
    progress->update(++done, item.name());
    if (run.failure && run.failure->outcome == Outcome::kTransient) exit_code = kExitTransient;
    if (run.failure && (run.failure->outcome == Outcome::kTransient || s.fail_fast)) stop = true;
  };
  cb.stop_requested = [&] { return stop || detail::pending_signal() != 0; };

  const int workers = s.threads > 0 ? s.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::size_t window =
      s.prefetch > 0 ? static_cast<std::size_t>(s.prefetch) : 2 * static_cast<std::size_t>(workers);
  {
    detail::WorkerPool pool(workers);
    detail::run_ordered_stages(items.size(), window, pool, cb);
  }
  runs.clear();  // drops the `-` outputs of items never emitted
  progress->finish();
  remove_temps();

  const int sig = detail::pending_signal();
  if (exit_code == kExitOk && failed > 0) exit_code = kExitItemFailed;
  if (sig) exit_code = sig == SIGTERM ? kExitTerminated : kExitInterrupted;
  if (sig)
    log->warn("{}: stopped after {} of {} items", sig == SIGTERM ? "terminated" : "interrupted", done, items.size());

  // 4. The summary.
  nlohmann::json summary = nlohmann::json::object();
  summary["type"] = "summary";
  summary["tool"] = name;
  summary["version"] = S3D_VERSION;
  summary["git"] = S3D_GIT_SHA;
  summary["device"] = device.to_string();
  summary["items"] = items.size();
  summary["total_items"] = total_items;
  summary["ok"] = ok;
  summary["failed"] = failed;
  summary["skipped"] = skipped;
  summary["not_run"] = items.size() - done;
  summary["seconds"] = std::chrono::duration<double>(Clock::now() - batch_start).count();
  summary["exit_code"] = exit_code;
  summary["workers"] = workers;
  summary["prefetch"] = window;
  summary["handle_seconds"] = handle_seconds;
  if (!stage_totals.empty()) summary["stage_seconds"] = stage_totals;
  if (sig) summary["interrupted"] = sig == SIGTERM ? "SIGTERM" : "SIGINT";
  summary["settings"] = effective_settings();
  try {
    for (auto& fn : summary_fns) fn(summary);
  } catch (...) {
    const Failure f = classify(std::current_exception());
    print_error("error: summary: " + f.message);
  }
  records->write(summary);
  log->info("{} ok, {} failed, {} skipped of {} items", ok, failed, skipped, items.size());
  if (!stage_totals.empty() && ok > 0) {
    std::ostringstream os;
    for (const auto& [stage, secs] : stage_totals) os << " " << stage << " " << 1e3 * secs / static_cast<double>(ok);
    log->info("ms per item by stage (summed over {} workers and the main thread):{}", workers, os.str());
  }
  return exit_code;
}

// ---------------------------------------------------------------------------------------------------------

Tool::Tool(std::string name, std::string summary, ItemSpec spec)
    : impl_(std::make_unique<Impl>(std::move(name), std::move(summary), std::move(spec))) {}

Tool::~Tool() {
  // The default logger's sink points at this tool's progress bar: detach it before the bar goes away.
  if (impl_->log && spdlog::default_logger() == impl_->log) {
    auto plain = detail::make_stderr_logger(impl_->name, detail::stderr_wants_color(), nullptr);
    plain->set_level(impl_->log->level());
    spdlog::set_default_logger(plain);
  }
}

CLI::App& Tool::app() { return impl_->app; }

void Tool::add_example(std::string command_line, std::string what_it_does) {
  impl_->examples.emplace_back(std::move(command_line), std::move(what_it_does));
}

const CommonSettings& Tool::settings() const { return impl_->s; }

void Tool::format_help(std::string description) { impl_->format_description = std::move(description); }

void Tool::on_start(std::function<void(const Device&)> fn) { impl_->start_fns.push_back(std::move(fn)); }

void Tool::on_summary(std::function<void(nlohmann::json& summary)> fn) { impl_->summary_fns.push_back(std::move(fn)); }

void Tool::outputs_of(OutputsOf fn) { impl_->outputs_fn = std::move(fn); }

void Tool::expand_arguments(ExpandArgument fn) { impl_->expand_fn = std::move(fn); }

int Tool::run(int argc, char** argv, ItemHandler handler) {
  detail::ErasedStages stages;
  stages.handle = [handler = std::move(handler)](const Item& item, detail::Erased&, ItemContext& ctx, const Item*,
                                                 detail::Erased*) -> detail::Erased {
    return std::make_shared<nlohmann::json>(handler(item, ctx));
  };
  return run_stages(argc, argv, std::move(stages));
}

int Tool::run_stages(int argc, char** argv, detail::ErasedStages stages) {
  try {
    return impl_->run(argc, argv, stages);
  } catch (const detail::BrokenPipe&) {
    // The consumer stopped reading: not an error (docs/CLI.md).
    impl_->remove_temps();
    return kExitOk;
  } catch (const std::exception& e) {
    impl_->remove_temps();
    std::fprintf(stderr, "%s: internal error: %s\n", impl_->name.c_str(), one_line(e.what()).c_str());
    return kExitItemFailed;
  } catch (...) {
    impl_->remove_temps();
    std::fprintf(stderr, "%s: internal error\n", impl_->name.c_str());
    return kExitItemFailed;
  }
}

}  // namespace s3d::cli
