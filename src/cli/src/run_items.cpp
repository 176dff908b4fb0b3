#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "report.hpp"
#include "s3d/cli/atomic_file.hpp"
#include "s3d/cli/inputs.hpp"
#include "s3d/cli/shard.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/ordered_stages.hpp"
#include "s3d/core/parallel.hpp"
#include "s3d/core/worker_pool.hpp"
#include "signals.hpp"
#include "tool_impl.hpp"

namespace fs = std::filesystem;

namespace s3d::cli {
namespace detail {

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

}  // namespace detail

using detail::classify;
using detail::Failure;
using detail::one_line;
using detail::Outcome;
using detail::SkipItem;

int Tool::Impl::run(int argc, char** argv, const detail::ErasedStages& stages) {
  using Clock = std::chrono::steady_clock;
  const auto batch_start = Clock::now();
  if (argc >= 2 && std::string(argv[1]) == "report") return run_report(argc - 1, argv + 1);
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
    shard = parse_shard(s.shard, s.shard_count);
    const std::vector<Device> requested = parse_devices(s.device);
    if ((requested.size() > 1 || s.device == "cuda:all") && !several_devices)
      throw InvalidArgument("--device " + s.device + ": " + name +
                            " runs on one device (one process per GPU: --shard i/N --device cuda:i)");
    std::vector<Item> all = collect_items();
    total_items = all.size();
    validate_outputs(all.size());
    items = select_shard(all, shard);
    bool fell_back = false;
    devices = resolve_devices(requested, &fell_back);
    device = devices.front();
    if (fell_back)
      log->warn(cuda_built() ? "no CUDA device visible: running on the CPU"
                             : "this build has no CUDA support: running on the CPU");
    for (const Device& d : devices) log->info("device: {}", describe_device(d));
    set_cpu_threads(s.threads);
    for (auto& fn : start_fns) fn(device);
    check_collisions(all);
    // Staged copies of `-`, device and FIFO outputs live in $TMPDIR: those a killed run of this host left
    // are removed now, even when every item is skipped and nothing is staged there.
    std::error_code tmp_ec;
    if (const auto tmp_dir = std::filesystem::temp_directory_path(tmp_ec); !tmp_ec)
      remove_stale_temps(tmp_dir.string());
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
  std::size_t ok = 0, failed = 0, skipped = 0, interrupted_items = 0, done = 0;
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
  std::vector<nlohmann::json> ok_records;  // for the tool's aggregates, in index order
  double handle_seconds = 0.0;
  OrderedStageStats stage_stats;  // the main thread's waits for loads
  bool stop = false;              // --fail-fast or a transient error: handle no more items

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

  OrderedStageCallbacks cb;
  cb.load = [&](std::size_t k) {
    ItemRun& run = runs[k];
    const Item& item = items[k];
    run.start = Clock::now();
    run.record = base_record(item);
    run.ctx = std::make_unique<Context>(*this, item, s.overwrite);
    guarded(run, [&] {
      // A read of a pipe, FIFO or device may block forever (in the tool's outputs_of too, which may sniff
      // an input's format): a signal then ends the process at once.
      std::optional<detail::BlockingWait> wait;
      if (std::any_of(item.inputs.begin(), item.inputs.end(), detail::may_block)) wait.emplace();
      // Existing outputs are decided before any work when the tool says what it will write.
      if (outputs_fn) {
        const std::vector<std::string> outs = outputs_fn(item, *run.ctx);
        if (run.ctx->skip_for_existing(outs)) throw SkipItem{};
        if (!outs.empty()) run.record["output"] = outs.front();
      }
      if (stages.load) run.input = stages.load(item, *run.ctx);
    });
  };
  cb.handle = [&](std::size_t k, std::size_t loaded_ahead) {
    ItemRun& run = runs[k];
    const Item& item = items[k];
    if (!settled(run) && !run.output) {  // an item an earlier group took has its output
      log->debug("item {}: {}", item.index + 1, item.name());
      // The loaded items right after this one, up to the first that is settled (failed or skipped).
      detail::ErasedAhead ahead;
      for (std::size_t j = k + 1; j <= k + loaded_ahead && !settled(runs[j]); ++j)
        ahead.push_back({&items[j], &runs[j].input});
      const auto t0 = Clock::now();
      guarded(run, [&] {
        // A tool without a load stage reads its inputs here.
        std::optional<detail::BlockingWait> wait;
        if (!stages.load && std::any_of(item.inputs.begin(), item.inputs.end(), detail::may_block)) wait.emplace();
        std::vector<detail::Erased> outputs = stages.handle(item, run.input, *run.ctx, ahead);
        if (outputs.empty() || outputs.size() > 1 + ahead.size())
          throw std::logic_error("a group handler returned " + std::to_string(outputs.size()) + " outputs for 1 + " +
                                 std::to_string(ahead.size()) + " items");
        run.output = std::move(outputs.front());
        for (std::size_t j = 1; j < outputs.size(); ++j) runs[k + j].output = std::move(outputs[j]);
      });
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
      run.ctx->commit_outputs();  // all of the item's outputs, or none
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
    if (settled(run)) run.ctx->discard_outputs();
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
      // A failed item writes nothing (all or nothing): its record names no output.
      run.record.erase("output");
      run.record.erase("outputs");
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
    if (status == "ok" && ctx->interrupted()) status = "interrupted";
    run.record["status"] = status;
    if (status == "interrupted") ++interrupted_items;
    if (status == "ok") ++ok;
    if (status == "skipped") ++skipped;
    if (status == "failed") ++failed;
    records->write(run.record);
    if (status == "ok" && !aggregate_fns.empty()) ok_records.push_back(std::move(run.record));
    run.record = nlohmann::json();
    progress->update(++done, item.name());
    if (run.failure && run.failure->outcome == Outcome::kTransient) exit_code = kExitTransient;
    if (run.failure && (run.failure->outcome == Outcome::kTransient || s.fail_fast)) stop = true;
  };
  cb.stop_requested = [&] { return stop || detail::pending_signal() != 0; };

  // Four items per worker keep every worker busy while the in-order handler waits on a slow item (a
  // larger file, a page-cache miss); on a 16-core GPU machine two per worker left workers idle.
  constexpr std::size_t kPrefetchPerWorker = 4;
  const int workers = s.threads > 0 ? s.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A group handler (handle_groups_of) keeps a group handled, the next one queued, one being written and one
  // loading.
  constexpr std::size_t kGroupsInFlight = 4;
  const std::size_t window =
      s.prefetch > 0 ? static_cast<std::size_t>(s.prefetch)
                     : std::max(kPrefetchPerWorker * static_cast<std::size_t>(workers), kGroupsInFlight * group_size);
  {
    WorkerPool pool(workers);
    run_ordered_stages(items.size(), window, pool, cb, group_size - 1, &stage_stats);
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
  summary["device"] = to_string(devices.empty() ? std::vector<Device>{device} : devices);
  summary["shard"] = {{"index", shard.index}, {"count", shard.count}, {"source", shard.source}};
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) summary["cuda_visible_devices"] = visible;
  summary["items"] = items.size();
  summary["total_items"] = total_items;
  summary["ok"] = ok;
  summary["failed"] = failed;
  summary["skipped"] = skipped;
  summary["not_run"] = items.size() - done;
  summary["interrupted_items"] = interrupted_items;
  summary["seconds"] = std::chrono::duration<double>(Clock::now() - batch_start).count();
  summary["exit_code"] = exit_code;
  summary["workers"] = workers;
  summary["prefetch"] = window;
  summary["handle_seconds"] = handle_seconds;
  summary["load_wait_seconds"] = stage_stats.load_wait_seconds;
  if (!stage_totals.empty()) summary["stage_seconds"] = stage_totals;
  if (sig) summary["interrupted"] = sig == SIGTERM ? "SIGTERM" : "SIGINT";
  summary["settings"] = effective_settings();
  try {
    for (auto& fn : summary_fns) fn(summary);
    for (auto& fn : aggregate_fns) fn(ok_records, summary);
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

}  // namespace s3d::cli
