#pragma once
// The frame every s3d tool is built on (docs/CLI.md): common flags, logging, batch inputs (positional
// files, --input-list, --manifest JSON Lines), --shard, output templates, atomic outputs, --json
// records, progress, exit codes, signal handling. A tool registers its own options on `app()`,
// describes its items, and hands the frame either one callback per item, or three stages (load on worker
// threads, handle in input order on the main thread, write on worker threads; see Stages); `run()` does
// the rest.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "s3d/cli/merge_reports.hpp"
#include "s3d/core/device.hpp"

namespace s3d::cli {

/// Process exit codes shared by all tools (documented in README and each --help).
enum ExitCode : int {
  kExitOk = 0,             ///< every item succeeded or was skipped
  kExitItemFailed = 1,     ///< one or more items failed (bad or unusable input); others were processed
  kExitUsage = 2,          ///< usage or configuration error (CLI11's own codes are remapped here)
  kExitTransient = 75,     ///< no GPU for --device cuda, out of GPU memory, CUDA context lost
  kExitInterrupted = 130,  ///< SIGINT
  kExitTerminated = 143,   ///< SIGTERM
};

/// One unit of work of a batch (an image pair, a detections file).
struct Item {
  std::size_t index = 0;            ///< position in the full input order (before --shard)
  std::vector<std::string> inputs;  ///< input paths as given (`-` = stdin); `inputs_per_item` of them
  nlohmann::json fields;            ///< the manifest record (empty object for positional inputs)
  /// Name used in messages and output templates: the first input's path (`-` shows as `<stdin>`).
  std::string name() const;
};

/// What a tool tells the frame about its items.
struct ItemSpec {
  /// Inputs per item: 1 (nms-filter) or 2 (sgm-depth: left right). Positional inputs are grouped by it.
  int inputs_per_item = 1;
  /// Manifest keys holding the inputs, in order (e.g. {"left","right"} or {"input"}).
  std::vector<std::string> manifest_keys{"input"};
  /// Asked with the `-o` list before any item runs: true when an output sent to stdout (`-`) can take its
  /// format only from --format (sgm-depth's disparity maps), so that `-o -` without --format is a usage error
  /// up front. Null (the default): the tool can infer it (nms-filter writes the input's format; sgm-depth's
  /// clouds are always PLY).
  std::function<bool(const std::vector<std::string>& outputs)> stdout_needs_format;
};

/// Per-item services the frame gives the item callback.
class ItemContext {
 public:
  virtual ~ItemContext() = default;
  /// Resolves the output path of `item` for output slot `slot` (0 = the first `-o`/default), applying
  /// the name template placeholders ({} {/} {.} {/.} {//} {#}) and --output-dir. `default_ext` is used
  /// when only --output-dir is given (e.g. ".pfm": `DIR/{/.}.pfm`); the result may be `-` (stdout). A relative
  /// -o result is placed under --output-dir when both are given. Returns "" when the slot was not asked for
  /// (neither a -o for it nor --output-dir): optional outputs are skipped, and write_atomically("") fails
  /// the item with "no output path".
  virtual std::string output_path(std::size_t slot, const std::string& default_ext) const = 0;
  /// Stages one output file: `write` gets a temporary path in the target folder and must write the complete
  /// file there. The item's outputs are all or nothing: the frame renames every staged output onto its path
  /// only once the item's last stage has succeeded (for `-`, copies it to stdout), and removes every temp
  /// when the item fails. Details: missing parent folders are created; the temp name keeps the target's
  /// extension (for `-` it is --format's), so writers choosing by extension work; a symbolic link at `path` is
  /// followed (its target is replaced, the link kept); a character device or FIFO at `path` (`/dev/null`) is
  /// written through, never replaced, and never counts as an existing output; a folder at `path` fails the
  /// item; an existing file fails the item (IoError) without --overwrite, or ends it as "skipped" under
  /// --skip-existing; an exception's message naming the temp path is rewritten to name `path`; the path is
  /// reported as the record's "output" ("outputs" when several).
  /// @throws IoError when the writer produced no file, InvalidArgument for an empty `path`; whatever `write`
  ///         throws. A failed rename at the end fails the item.
  virtual void write_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write) = 0;
  /// Stages one output folder (a VOC folder of box files): `write` gets an empty temporary folder next to
  /// `path` and fills it. Committed with the item's other outputs: renamed onto `path` when `path` does not
  /// exist, else its files are moved into the existing folder (each replacing a file of the same name, which
  /// needs --overwrite; files already there and not written are kept). A file at `path` fails the item.
  virtual void write_folder_atomically(const std::string& path,
                                       const std::function<void(const std::string& tmp_dir)>& write) = 0;
  /// A readable path for `input` (for `-`, stdin is copied once into a temp file that the frame deletes).
  /// @throws DataError `-: empty input` when stdin has no data; IoError when it cannot be copied.
  virtual std::string readable_path(const std::string& input) = 0;
  /// The concrete device for this run (auto already resolved).
  virtual const Device& device() const = 0;
  /// Adds `seconds` to the item's time in `stage` (e.g. "decode", "encode"). The item's record gets them
  /// as "stage_seconds", the summary their sums over the batch (and `-v` one line of means per item).
  virtual void add_stage_seconds(const std::string& stage, double seconds) = 0;
  /// Says the item stopped part-way because interrupt_requested() (a tool that keeps partial work, such as
  /// icp-fuse's trajectory of the frames done). What it wrote is committed, but its record's status is
  /// "interrupted", not "ok": it counts as not done (the summary's `interrupted_items`), stays out of the
  /// batch's aggregates, and `TOOL report` prefers any complete record of the item to it.
  virtual void mark_interrupted() = 0;
};

/// Times a scope into ItemContext::add_stage_seconds (wall clock, from construction to stop() or the end
/// of the scope).
class StageTimer {
 public:
  StageTimer(ItemContext& ctx, std::string stage)
      : ctx_(&ctx), stage_(std::move(stage)), start_(std::chrono::steady_clock::now()) {}
  ~StageTimer() { stop(); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  void stop() {
    if (!ctx_) return;
    ctx_->add_stage_seconds(stage_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    ctx_ = nullptr;
  }

 private:
  ItemContext* ctx_;
  std::string stage_;
  std::chrono::steady_clock::time_point start_;
};

/// The tool-side callback: process one item, return fields for its JSON record (the frame adds
/// "type":"item", "index", "input" (+ "inputs" for several), "status", "seconds", "output", and on failure
/// "error"). Throw s3d exceptions on failure: IoError/DataError/InvalidArgument fail the item (the batch
/// goes on), DeviceUnavailable/OutOfMemory/CudaError stop the batch with exit 75.
using ItemHandler = std::function<nlohmann::json(const Item&, ItemContext&)>;
/// The items after the one being handled, for a handler that starts work early (queues the next pair on a
/// GPU while this one computes) or groups several items in one launch (Tool::handle_groups_of): `item` and
/// `input` are the next item and its loaded input, null when there is none or its load is not finished
/// (or failed); `ahead` lists it and the loaded items after it, consecutively, up to the first that failed
/// or was skipped. The frame's next handle calls are for exactly these items and inputs, in order, unless
/// the batch stops first (--fail-fast, a transient error, a signal): early work must then be discardable; a
/// group handler (Stages::handle_group) takes the first of them into its own call instead.
template <typename Input>
struct NextItem {
  const Item* item = nullptr;
  Input* input = nullptr;
  std::vector<std::pair<const Item*, Input*>> ahead;
};

/// A tool's work on one item as three stages, so that decoding and encoding overlap the main work:
///   load    (worker threads)  the item's files -> Input (read and decode). Up to --prefetch items ahead.
///   handle  (the main thread, in input order)  Input -> Output (the compute; GPU calls belong here).
///   write   (worker threads)  Output -> output files (encode, ItemContext::write_atomically) and the
///           record's fields, as for ItemHandler.
/// Records are emitted, and `-o -` data copied to stdout, in input order. A stage's exception fails the item
/// exactly as an ItemHandler's would (the later stages do not run); a skipped item (--skip-existing, via
/// outputs_of) is never loaded. Input and Output must be movable; each is freed as soon as its stage is done.
/// A handler that takes several items per call (one GPU launch for many small inputs) sets `handle_group`
/// instead of `handle`, with Tool::handle_groups_of(n): it handles this item and the first m - 1 items of
/// `next.ahead` (0 <= m - 1 <= next.ahead.size(), in order) and returns their m outputs, this item's first. It
/// may move the taken items' inputs only once it can no longer throw. The frame calls no handler for the items a
/// group took: each output goes to its own item's write stage and record. An exception fails this item only;
/// the items after it are then handled by their own calls.
template <typename Input, typename Output>
struct Stages {
  std::function<Input(const Item&, ItemContext&)> load;
  std::function<Output(const Item&, Input&, ItemContext&, NextItem<Input> next)> handle;
  std::function<std::vector<Output>(const Item&, Input&, ItemContext&, NextItem<Input> next)> handle_group;
  std::function<nlohmann::json(const Item&, Output&, ItemContext&)> write;
};

namespace detail {
/// Stages with their types erased (what Tool::run(argc, argv, Stages) hands the frame).
using Erased = std::shared_ptr<void>;
using ErasedAhead = std::vector<std::pair<const Item*, Erased*>>;
struct ErasedStages {
  std::function<Erased(const Item&, ItemContext&)> load;  ///< empty: nothing to load
  /// The outputs of this item and of the first items of `ahead` its call took (at least this item's).
  std::function<std::vector<Erased>(const Item&, Erased& input, ItemContext&, const ErasedAhead& ahead)> handle;
  std::function<nlohmann::json(const Item&, Erased& output, ItemContext&)> write;  ///< empty: output is the json
};
}  // namespace detail

/// Optional: the outputs an item will produce (for --skip-existing / overwrite checks before work, and the
/// check, before any item runs, that no two items write the same path; for a folder output, the files it
/// will hold).
using OutputsOf = std::function<std::vector<std::string>(const Item&, ItemContext&)>;

/// Optional: expands one positional argument into whole items, for an argument that stands for several
/// (sgm-depth: a dataset folder -> its stereo pairs). Called once per positional argument, in order (never
/// for `-`, nor for --input-list/--manifest lines), after parsing and before `on_start`. Returns the items as
/// manifest records: JSON objects holding the ItemSpec::manifest_keys as strings (the item's inputs), all
/// fields kept in Item::fields; or std::nullopt for an ordinary input path, grouped by inputs_per_item with
/// its neighbours as usual. Throw (DataError, InvalidArgument) for an unusable argument: exit 2.
using ExpandArgument = std::function<std::optional<std::vector<nlohmann::json>>(const std::string& argument)>;

/// The most --threads accepted (a usage error above it): far more threads than any machine has cores is a
/// typo, and OpenMP fails on it (tens of thousands abort or crash inside the runtime).
constexpr int kMaxThreads = 1024;

/// Settings every tool shares, filled by the frame from flags and --config.
struct CommonSettings {
  std::string device = "auto";
  bool json = false;
  std::string report_path;        ///< --report FILE (JSON Lines), empty = none
  std::string progress = "auto";  ///< auto|always|never
  bool overwrite = false;
  bool skip_existing = false;
  int threads = 0;    ///< 0 = all cores; also the number of worker threads of Stages
  int prefetch = 0;   ///< --prefetch N: items in flight at most (loaded ahead, handled, being written); 0 = auto
  int verbosity = 0;  ///< -q = -1, -v = 1, -vv = 2
  bool fail_fast = false;
  std::string shard;                    ///< "i/n", "auto" or empty
  int shard_count = 0;                  ///< --shard-count N: the count for `--shard auto` under JOB_COMPLETION_INDEX
  std::string input_list;               ///< --input-list FILE|-
  std::string manifest;                 ///< --manifest FILE|-
  std::string output_dir;               ///< --output-dir DIR
  std::vector<std::string> outputs;     ///< -o values (templates allowed), one per output slot
  std::string format;                   ///< --format (for `-o -`, or to override the extension)
  std::vector<std::string> positional;  ///< positional inputs
};

/// True once SIGINT or SIGTERM was received. A long item may poll it and throw to be dropped early (the
/// frame then records nothing for that item and exits 130/143); otherwise the item finishes first.
bool interrupt_requested();

/// The output format for `path`: --format when given, else the path's extension without the dot, in
/// lower case (`disp.PFM` -> `pfm`); empty for `-` without --format.
std::string format_of(const std::string& path, const CommonSettings& settings);

class Tool {
 public:
  /// `name` is the executable name (`nms-filter`); `summary` one line for --help.
  Tool(std::string name, std::string summary, ItemSpec spec);
  ~Tool();

  /// The CLI11 app, for the tool's own options (add them before `run`).
  CLI::App& app();
  /// Appends a real example to the end of --help (2-4 of them).
  void add_example(std::string command_line, std::string what_it_does);
  /// Replaces the help text of the common `--format FMT` option (default: "output format, overriding the
  /// extension (needed with `-o -`)"), for a tool whose --format means more (nms-filter: the input's and
  /// the output's box format). Call before `run`.
  void format_help(std::string description);
  /// Effective settings (valid inside callbacks and after parsing).
  const CommonSettings& settings() const;
  /// Called after parsing, before any input is read: validate tool options (throw InvalidArgument ->
  /// exit 2) and set up engines. Gets the resolved device.
  void on_start(std::function<void(const Device&)> fn);
  /// Adds fields to the final summary record (settings, facts of the run).
  void on_summary(std::function<void(nlohmann::json& summary)> fn);
  /// Adds dataset-level fields computed from the successful items' records (accuracy over the batch,
  /// totals): used for the run's summary and by `TOOL report` for the merge of shards (merge_reports.hpp),
  /// so a batch's merged report equals one process's summary. Keep every input it needs in the records.
  void aggregate(Aggregate fn);
  void outputs_of(OutputsOf fn);
  /// Lets positional arguments stand for several items (see ExpandArgument).
  void expand_arguments(ExpandArgument fn);
  /// For a handler that processes up to `n` items per call (the one handled and n - 1 of NextItem::ahead):
  /// before each handle the frame waits for the loads of the next n - 1 items, and keeps at least 2n - 1
  /// items in flight (4n without --prefetch: a group handled, the next one queued, one written, one loading).
  /// Call before `run` or from `on_start`. Default 1.
  void handle_groups_of(std::size_t n);
  /// Lets --device name several GPUs (`cuda:all`, `cuda:0,1`): the tool spreads its items over devices(). Without
  /// it such a list is a usage error (one process per GPU: --shard). Call before `run`.
  void spread_over_devices();
  /// The resolved --device list (valid from on_start on): one device, or several GPUs (spread_over_devices).
  const std::vector<Device>& devices() const;

  /// Parses argv, runs every item of this shard through `handler`, writes records, returns the exit code.
  /// Never throws.
  int run(int argc, char** argv, ItemHandler handler);
  /// The same, with the item's work split into stages that overlap across items (see Stages).
  template <typename Input, typename Output>
  int run(int argc, char** argv, Stages<Input, Output> stages) {
    detail::ErasedStages erased;
    erased.load = [load = std::move(stages.load)](const Item& item, ItemContext& ctx) -> detail::Erased {
      return std::make_shared<Input>(load(item, ctx));
    };
    auto next_of = [](const detail::ErasedAhead& ahead) {
      NextItem<Input> next;
      for (const auto& [ahead_item, ahead_input] : ahead) {
        if (!*ahead_input) break;
        next.ahead.emplace_back(ahead_item, static_cast<Input*>(ahead_input->get()));
      }
      if (!next.ahead.empty()) std::tie(next.item, next.input) = next.ahead.front();
      return next;
    };
    if (stages.handle_group) {
      erased.handle = [group = std::move(stages.handle_group), next_of](
                          const Item& item, detail::Erased& input, ItemContext& ctx,
                          const detail::ErasedAhead& ahead) -> std::vector<detail::Erased> {
        std::vector<Output> outputs = group(item, *static_cast<Input*>(input.get()), ctx, next_of(ahead));
        std::vector<detail::Erased> erased_outputs;
        for (Output& o : outputs) erased_outputs.push_back(std::make_shared<Output>(std::move(o)));
        return erased_outputs;
      };
    } else {
      erased.handle = [handle = std::move(stages.handle), next_of](
                          const Item& item, detail::Erased& input, ItemContext& ctx,
                          const detail::ErasedAhead& ahead) -> std::vector<detail::Erased> {
        return {std::make_shared<Output>(handle(item, *static_cast<Input*>(input.get()), ctx, next_of(ahead)))};
      };
    }
    erased.write = [write = std::move(stages.write)](const Item& item, detail::Erased& output, ItemContext& ctx) {
      return write(item, *static_cast<Output*>(output.get()), ctx);
    };
    return run_stages(argc, argv, std::move(erased));
  }

 private:
  int run_stages(int argc, char** argv, detail::ErasedStages stages);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace s3d::cli
