#include "s3d/cli/tool.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
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
#include "tool_impl.hpp"
#include "versions.hpp"

namespace fs = std::filesystem;

namespace s3d::cli {

std::string format_of(const std::string& path, const CommonSettings& settings) {
  std::string f = settings.format;
  if (f.empty() && path != "-") f = fs::path(path).extension().string();
  if (!f.empty() && f[0] == '.') f.erase(0, 1);
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return f;
}

using detail::one_line;

namespace {

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

// --config's reader: CLI11's TOML/INI reader, after a check of every line, less the flags set to false (or
// 0). CLI11 ignores lines it cannot read and keys it does not know (`disparites = 16` would run with the
// default); here each is a usage error naming the file and line. CLI11 counts a flag read from a config as
// given even when it is false, which trips exclusions (--overwrite/--skip-existing, -q/-v, a tool's
// --x/--no-x); a false flag in a config means the flag is not given.
class ConfigReader final : public CLI::ConfigBase {
 public:
  explicit ConfigReader(const CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::ostringstream whole;
    whole << input.rdbuf();
    const std::string text = whole.str();
    check_lines(text);
    std::istringstream again(text);
    std::vector<CLI::ConfigItem> items = CLI::ConfigBase::from_config(again);
    items.erase(std::remove_if(items.begin(), items.end(), [this](const CLI::ConfigItem& i) { return false_flag(i); }),
                items.end());
    return items;
  }

 private:
  static std::string trimmed(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
  }

  // The option a config key names in `app` (looked up as CLI11 does: `--name`, `-n`, then the bare name).
  static const CLI::Option* find_option(const CLI::App& app, const std::string& name) {
    const CLI::Option* opt = app.get_option_no_throw("--" + name);
    if (!opt && name.size() == 1) opt = app.get_option_no_throw("-" + name);
    if (!opt) opt = app.get_option_no_throw(name);
    return opt;
  }

  // Every line must be blank, a comment, a [section] naming a subcommand, or KEY = VALUE with a key this
  // tool reads from a config. @throws CLI::ConfigError naming FILE:LINE.
  void check_lines(const std::string& text) const {
    std::string file = "--config";
    if (const CLI::Option* c = app_.get_config_ptr(); c && !c->results().empty()) file = c->results().back();
    std::istringstream in(text);
    std::string raw;
    const CLI::App* section = &app_;
    for (std::size_t line_no = 1; std::getline(in, raw); ++line_no) {
      const std::string where = file + ":" + std::to_string(line_no) + ": ";
      const std::string line = trimmed(raw);
      if (line.empty() || line[0] == '#' || line[0] == ';') continue;
      if (line.front() == '[' && line.back() == ']') {
        std::string name = line.substr(1, line.size() - 2);
        if (name.size() > 1 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
        section = &app_;
        if (name == "default") continue;
        try {
          for (std::size_t at = 0; at <= name.size();) {
            const std::size_t dot = std::min(name.find('.', at), name.size());
            section = section->get_subcommand(name.substr(at, dot - at));
            at = dot + 1;
          }
        } catch (const CLI::Error&) {
          throw CLI::ConfigError(where + "unknown section [" + name + "]");
        }
        continue;
      }
      const std::size_t eq = line.find('=');
      if (eq == std::string::npos) throw CLI::ConfigError(where + "cannot read `" + line + "`: expected KEY = VALUE");
      std::string key = trimmed(line.substr(0, eq));
      const std::string value = trimmed(line.substr(eq + 1));
      if (key.size() > 1 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front())
        key = key.substr(1, key.size() - 2);
      if (key.empty() || value.empty())
        throw CLI::ConfigError(where + "cannot read `" + line + "`: expected KEY = VALUE");
      if (value.front() == '[' && value.back() != ']') {  // an array over several lines
        while (std::getline(in, raw)) {
          ++line_no;
          const std::string more = trimmed(raw);
          if (!more.empty() && more.back() == ']') break;
        }
      }
      const CLI::App* app = section;
      std::string name = key;
      try {
        for (std::size_t dot; (dot = name.find('.')) != std::string::npos; name = name.substr(dot + 1))
          app = app->get_subcommand(name.substr(0, dot));
      } catch (const CLI::Error&) {
        throw CLI::ConfigError(where + "unknown setting `" + key + "`");
      }
      const CLI::Option* opt = find_option(*app, name);
      if (!opt || opt->get_positional()) throw CLI::ConfigError(where + "unknown setting `" + key + "`");
      if (!opt->get_configurable()) throw CLI::ConfigError(where + "`" + key + "` cannot be set in a config file");
    }
  }

  bool false_flag(const CLI::ConfigItem& item) const {
    if (item.inputs.size() != 1 || item.name == "++" || item.name == "--") return false;
    const CLI::App* app = &app_;
    try {
      for (const auto& parent : item.parents) app = app->get_subcommand(parent);
    } catch (const CLI::Error&) {
      return false;  // CLI11 reports it
    }
    const CLI::Option* opt = find_option(*app, item.name);
    if (!opt || !opt->get_configurable() || opt->get_expected_min() != 0 || opt->get_expected_max() != 0) return false;
    return flag_value(item.inputs.front()) <= 0;
  }

  const CLI::App& app_;
};

}  // namespace

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
  app.add_option("--shard", st.shard,
                 "process items k with k mod n == i (i/n), or `auto`: from Slurm (array task, srun task), a Kubernetes "
                 "Indexed Job or GNU parallel (docs/CLUSTER.md)")
      ->type_name("i/n|auto")
      ->group(io_group);
  app.add_option("--shard-count", st.shard_count,
                 "the shard count for `--shard auto` (needed under Kubernetes and GNU parallel; for a Slurm array, its "
                 "size, so that a task re-submitted alone keeps its shard)")
      ->type_name("N")
      ->check(CLI::PositiveNumber)
      ->group(io_group);
  app.add_flag("--fail-fast", st.fail_fast, "stop at the first failed item")->group(io_group);

  app.add_option("--device", st.device,
                 "compute device: auto (GPU, else CPU with a warning), cpu, cuda[:N] (sgm-depth: also cuda:all or a "
                 "list cuda:0,1, one process over several GPUs)")
      ->type_name("auto|cpu|cuda[:N]")
      ->capture_default_str()
      ->group(common);
  app.add_option("--threads", st.threads, "CPU threads (0 = all cores; at most " + std::to_string(kMaxThreads) + ")")
      ->type_name("N")
      ->check(CLI::Range(0, kMaxThreads))
      ->capture_default_str()
      ->group(common);
  app.add_option("--prefetch", st.prefetch,
                 "items in flight at most: read ahead, being processed or written (0 = four times the worker threads, "
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
      sub->configurable();  // a [section] of --config selects it, so that --print-config's text runs as given
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
  os << "\nMerging the --report files of a batch's shards (docs/CLUSTER.md):\n  " << name
     << " report shard-*.jsonl -o merged.jsonl\n";
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
  // One app's options; a subcommand's go in its [section] (also a short-only option such as `-n`: key `n`).
  auto options_of = [&](const CLI::App& a) {
    for (const CLI::Option* opt : a.get_options()) {
      if (!opt->get_configurable()) continue;
      const std::string key = !opt->get_lnames().empty()   ? opt->get_lnames().front()
                              : !opt->get_snames().empty() ? opt->get_snames().front()
                                                           : std::string();
      if (key.empty() || key == "help" || key == "config") continue;
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
  };
  options_of(app);
  std::function<void(const CLI::App&, const std::string&)> sections = [&](const CLI::App& a, const std::string& at) {
    for (const CLI::App* sub : a.get_subcommands()) {  // the ones given on the command line
      const std::string section = at.empty() ? sub->get_name() : at + "." + sub->get_name();
      os << "\n[" << section << "]\n";
      options_of(*sub);
      sections(*sub, section);
    }
  };
  sections(app, "");
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
    // A list or manifest on a pipe or FIFO may never end: a signal must still end the process.
    std::optional<detail::BlockingWait> wait;
    if (detail::may_block(path)) wait.emplace();
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
  if (data_on_stdout && spec.stdout_needs_format && spec.stdout_needs_format(s.outputs) && s.format.empty())
    throw InvalidArgument("-o -: give --format FMT (stdout has no extension to choose the format by)");
  std::error_code ec;
  if (!s.output_dir.empty() && fs::exists(s.output_dir, ec) && !fs::is_directory(s.output_dir, ec))
    throw InvalidArgument("--output-dir " + s.output_dir + ": exists and is not a folder");
}

void Tool::Impl::check_collisions(const std::vector<Item>& items) {
  if (!outputs_fn) return;
  std::map<std::string, std::size_t> owner;  // an output's real path -> the position in `items` writing it
  for (std::size_t k = 0; k < items.size(); ++k) {
    Context ctx(*this, items[k], s.overwrite);
    std::vector<std::string> outs;
    try {
      std::optional<detail::BlockingWait> wait;  // outputs_of may sniff an input's format
      if (std::any_of(items[k].inputs.begin(), items[k].inputs.end(), detail::may_block)) wait.emplace();
      outs = outputs_fn(items[k], ctx);
    } catch (...) {
      continue;  // the item fails on its own when it runs
    }
    for (const auto& o : outs) {
      if (o.empty() || o == "-") continue;
      std::string key;
      try {
        key = resolve_links(o);
      } catch (const IoError&) {
        continue;
      }
      check_output_location(key);           // exit 2 now rather than a failure after the item's work
      if (is_write_through(key)) continue;  // many items may write into /dev/null or a FIFO
      key = fs::absolute(key).lexically_normal().string();
      const auto [it, fresh] = owner.emplace(key, k);
      if (fresh) continue;
      const auto describe = [&](std::size_t j) {
        return "item " + std::to_string(items[j].index + 1) + " (" + items[j].name() + ")";
      };
      if (it->second == k)
        throw InvalidArgument(describe(k) + " writes " + o + " twice: give each output its own name");
      throw InvalidArgument(describe(it->second) + " and " + describe(k) + " both write " + o +
                            ": make the output names differ (a template such as {/.} or {#})");
    }
  }
}

std::string Tool::Impl::copy_stdin() {
  std::lock_guard<std::mutex> lock(stdin_mutex);
  if (stdin_failure) std::rethrow_exception(stdin_failure);
  if (!stdin_copy.empty()) return stdin_copy;
  try {
    return copy_stdin_once();
  } catch (...) {
    stdin_failure = std::current_exception();
    throw;
  }
}

std::string Tool::Impl::copy_stdin_once() {
  if (stdin_used) throw InvalidArgument("`-` (stdin) was already read as a list or manifest");
  const std::string target = (fs::temp_directory_path() / "s3d-stdin").string();
  remove_stale_temps(fs::path(target).parent_path().string());
  const std::string tmp = temp_path_for(target);
  detail::register_temp(tmp);
  stdin_copy = tmp;  // remove_temps() deletes it on every way out, this function's errors included
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw IoError("-: cannot copy stdin to a temporary file in " + target + ": " + std::strerror(errno));
  std::size_t total = 0;
  {
    detail::BlockingWait wait;  // a pipe that never closes: a signal must still end the process
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        throw IoError(std::string("-: cannot read stdin: ") + std::strerror(err));
      }
      if (n == 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::write(fd, buf + done, static_cast<std::size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          const int err = errno;
          ::close(fd);
          throw IoError("-: cannot copy stdin to a temporary file: " + std::string(std::strerror(err)));
        }
        done += w;
      }
      total += static_cast<std::size_t>(n);
    }
  }
  if (::close(fd) != 0) throw IoError("-: cannot copy stdin to a temporary file: " + std::string(std::strerror(errno)));
  if (total == 0) throw DataError("-: empty input (stdin had no data)");
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

void Tool::aggregate(Aggregate fn) { impl_->aggregate_fns.push_back(std::move(fn)); }

void Tool::outputs_of(OutputsOf fn) { impl_->outputs_fn = std::move(fn); }

void Tool::expand_arguments(ExpandArgument fn) { impl_->expand_fn = std::move(fn); }
void Tool::handle_groups_of(std::size_t n) { impl_->group_size = std::max<std::size_t>(n, 1); }
void Tool::spread_over_devices() { impl_->several_devices = true; }
const std::vector<Device>& Tool::devices() const { return impl_->devices; }

int Tool::run(int argc, char** argv, ItemHandler handler) {
  detail::ErasedStages stages;
  stages.handle = [handler = std::move(handler)](const Item& item, detail::Erased&, ItemContext& ctx,
                                                 const detail::ErasedAhead&) -> std::vector<detail::Erased> {
    return {std::make_shared<nlohmann::json>(handler(item, ctx))};
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
