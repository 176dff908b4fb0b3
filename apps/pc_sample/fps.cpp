// pc-sample fps: exact farthest point sampling; the sampled cloud (every attribute, in selection order), its
// rows, or a picture; --batch B clouds per launch.
#include <limits>
#include <optional>

#include "command.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

void add_flags(CLI::App& fps, Flags& f) {
  fps.add_option("-n,--samples", f.samples, "number of points M to sample")->type_name("M");
  fps.add_option("--ratio", f.ratio, "sample ceil(r * N) points instead of -n, 0 < r <= 1")->type_name("R");
  fps.add_option("--start", f.start,
                 "first point: a row of the file (default: the first point kept, row 0 unless --drop-invalid "
                 "dropped it), or `random` (from --seed and the item's index)")
      ->type_name("I|random");
  fps.add_option("--seed", f.seed, "seed of --start random, a whole number in [0, 2^64)")
      ->type_name("UINT")
      ->capture_default_str();
  fps.add_flag("--allow-fewer", f.allow_fewer, "M > N samples all N points instead of failing");
  fps.add_flag("--drop-faces", f.fps_drop_faces, "write no face or other element, only the points");
  fps.add_option("--batch", f.batch,
                 "sample up to B clouds per launch (many clouds in flight on a GPU; results as one at a time); "
                 "default 0: 70 on a GPU, 1 on the CPU")
      ->capture_default_str()
      ->type_name("B");
  fps.add_option("--emit", f.fps_emit,
                 "cloud: the sampled points with all their attributes, in selection order (the input's format "
                 "unless -o's extension or --format names another); indices: their input rows, .txt one per "
                 "line or .npy int32; preview: a top-down PNG of the cloud with the samples in red (alone: -o "
                 "NAME.png; cloud,preview: beside the cloud as NAME.preview.png)")
      ->capture_default_str();
}

/// A whole number the flag's text holds exactly (`used` its characters), else none.
template <typename T, typename Parse>
std::optional<T> parse_whole(const std::string& text, Parse parse) {
  std::size_t used = 0;
  T v{};
  try {
    v = parse(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || used == 0) return std::nullopt;
  return v;
}

void plan(const Flags& f, Plan& p) {
  S3D_EXPECTS((f.samples > 0) != !f.ratio.empty(), "fps: give exactly one of -n M (M >= 1) or --ratio r");
  if (!f.ratio.empty()) {
    const auto ratio =
        parse_whole<double>(f.ratio, [](const std::string& s, std::size_t* n) { return std::stod(s, n); });
    p.ratio = ratio.value_or(0.0);
    S3D_EXPECTS(ratio && p.ratio > 0.0 && p.ratio <= 1.0,
                "--ratio: expected a number in (0, 1], got '" + f.ratio + "'");
  }
  S3D_EXPECTS(f.batch >= 0 && f.batch <= 4096, "--batch must be in [0, 4096] (0: the device's default)");
  p.batch = f.batch;
  p.samples = f.samples;
  if (f.start == "random") {
    p.random_start = true;
  } else if (!f.start.empty()) {
    const auto start =
        parse_whole<long long>(f.start, [](const std::string& s, std::size_t* n) { return std::stoll(s, n); });
    S3D_EXPECTS(start && *start >= 0, "--start: expected an index >= 0 or `random`, got '" + f.start + "'");
    p.start = *start;
  }
  // stoull accepts a sign and wraps "-5" around; a seed is digits only.
  const auto seed = f.seed.empty() || !std::isdigit(static_cast<unsigned char>(f.seed[0]))
                        ? std::nullopt
                        : parse_whole<unsigned long long>(
                              f.seed, [](const std::string& s, std::size_t* n) { return std::stoull(s, n); });
  S3D_EXPECTS(seed.has_value(), "--seed: expected a whole number in [0, 2^64), got '" + f.seed + "'");
  p.seed = *seed;
  p.allow_fewer = f.allow_fewer;
  p.emit_indices = parse_sample_emit(f.fps_emit, "cloud", "indices", p) == "indices";
  p.drop_faces = f.fps_drop_faces;
  p.local_origin = true;
}

std::vector<std::string> outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& p) {
  if (!p.emit_samples) return {preview_alone(ctx)};
  const std::string main = ctx.output_path(0, p.emit_indices ? ".indices.txt" : cloud_extension(item.inputs[0], p));
  if (!p.emit_preview || main.empty()) return {main};
  return {main, preview_beside(main)};
}

void check_outputs(const Plan&, const cli::CommonSettings&) {}

void make_engine(Run& run, const Device& device) {
  run.fps = std::make_unique<points::FpsEngine>(device);
  if (run.plan.batch > 1) run.fps_batches = std::make_unique<points::FpsPipeline>(device);
}

void compute(const cli::Item& item, Run& run, Job& job, Result& r) {
  const auto [m, start] = fps_samples_and_start(item, run.plan, job);
  r.start = start;
  r.selection = run.fps->run({job.local.data(), job.local.size() / 3}, m, r.start);
}

void write(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r, nlohmann::json& rec) {
  const Plan& p = run.plan;
  const InputCloud& in = r.job.in;
  cloud_fields(rec, r.job);
  const std::string& main = r.job.outputs.front();
  if (p.emit_preview)
    write_preview(ctx, r.job.outputs.back(), r.job, points::gather_positions(r.job.local, r.selection), "samples");
  rec["samples"] = r.selection.size();
  rec["start"] = in.file_row(r.start);
  rec["device"] = run.fps->device().to_string();
  if (!p.emit_samples) return;
  const std::string fmt = output_format(main, settings);
  if (p.emit_indices) {
    points::to_file_rows(r.selection, in.rows);
    write_indices(ctx, main, fmt, r.selection);
    return;
  }
  points::ElementChanges stats;
  const std::vector<std::int64_t> rows(r.selection.begin(), r.selection.end());
  const PointCloud sampled = points::select_rows(in.cloud, rows, p.drop_faces, stats);
  write_cloud(ctx, main, fmt.empty() ? in.cloud.meta.format : fmt, sampled);
  rec.update(elements_json(stats));
}

}  // namespace

std::pair<std::int64_t, std::int64_t> fps_samples_and_start(const cli::Item& item, const Plan& p, const Job& job) {
  const std::string& name = job.in.name;
  const std::int64_t n = static_cast<std::int64_t>(job.in.cloud.size());
  std::int64_t m = p.samples > 0 ? p.samples : points::samples_for_ratio(p.ratio, n);
  if (m > n) {
    if (!p.allow_fewer)
      throw DataError(name + ": -n " + std::to_string(m) + " exceeds the cloud's " + std::to_string(n) +
                      " points (--allow-fewer samples all of them)");
    m = n;
  }
  if (p.random_start) return {m, points::seeded_start(p.seed, item.index, n)};
  if (p.start < 0) return {m, 0};  // no --start: the first point kept
  // --start names a row of the file, as every index pc-sample writes does, also under --drop-invalid.
  const std::int64_t file_rows = n + static_cast<std::int64_t>(job.in.dropped_invalid);
  if (p.start >= file_rows)
    throw DataError(name + ": --start " + std::to_string(p.start) + " is not a point of the cloud (" +
                    std::to_string(file_rows) + " points)");
  const std::optional<std::int64_t> start = points::computed_row(p.start, job.in.rows);
  if (!start)
    throw DataError(name + ": --start " + std::to_string(p.start) +
                    " is a point that --drop-invalid dropped (a non-finite coordinate)");
  return {m, *start};
}

Command fps_command() {
  return {"fps",          "exact farthest point sampling: the sampled cloud or its indices",
          Mode::kFps,     &add_flags,
          &plan,          &outputs,
          &check_outputs, &make_engine,
          &compute,       &write};
}

}  // namespace s3d::pc_sample
