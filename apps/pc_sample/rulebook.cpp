// pc-sample rulebook: sparse-convolution rulebooks (spconv's indice pairs) of voxel coordinates read from an
// int32 .npy, or of a cloud voxelised first, one layer or a chain (a regular layer's outputs are the next
// layer's inputs), written as one .npz (a stored zip of .npy files) or the pairs as one .npy (docs/PC-SAMPLE.md,
// "Rulebooks").
#include <array>

#include "command.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/io/zip.hpp"

namespace s3d::pc_sample {
namespace {

std::string kind_of(const points::LayerRulebook& layer) {
  if (layer.inverse) return "inverse";
  return layer.spec.subm ? "subm" : "regular";
}

std::vector<std::int64_t> shape3(const std::array<std::int32_t, 3>& s) { return {s[0], s[1], s[2]}; }

std::vector<points::LayerRulebook> run_layers(points::RulebookEngine& engine, const Plan& plan,
                                              const points::SparseCoords& in, const std::string& name) {
  try {
    return points::build_chain(engine, in, plan.layers);
  } catch (const DataError& e) {
    throw DataError(name + ": " + e.what());
  }
}

std::string rulebook_file(const std::vector<points::LayerRulebook>& layers, bool chained, bool npy) {
  auto pairs_npy = [](const points::LayerRulebook& l) {
    const points::Rulebook& rb = l.rb;
    const std::vector<std::int32_t> pairs = rb.spconv_pairs(rb.inputs);
    return io::npy_bytes(pairs.data(), "<i4", {2, rb.kernel_volume, rb.inputs});
  };
  if (npy) return pairs_npy(layers.front());
  std::vector<std::pair<std::string, std::string>> files;
  for (const points::LayerRulebook& l : layers) {
    const points::Rulebook& rb = l.rb;
    const std::string prefix = chained ? l.name + "/" : "";
    const std::int64_t p = rb.pairs();
    files.emplace_back(prefix + "pairs.npy", pairs_npy(l));
    files.emplace_back(prefix + "counts.npy", io::npy_bytes(rb.counts.data(), "<i4", {rb.kernel_volume}));
    files.emplace_back(prefix + "offsets.npy", io::npy_bytes(rb.offsets.data(), "<i8", {rb.kernel_volume + 1}));
    files.emplace_back(prefix + "in_index.npy", io::npy_bytes(rb.in_index.data(), "<i4", {p}));
    files.emplace_back(prefix + "out_index.npy", io::npy_bytes(rb.out_index.data(), "<i4", {p}));
    files.emplace_back(prefix + "out_coords.npy", io::npy_bytes(rb.out.coords.data(), "<i4", {rb.out.count(), 4}));
    files.emplace_back(prefix + "out_shape.npy", io::npy_bytes(rb.out.shape.data(), "<i4", {3}));
  }
  return io::zip_stored(files);
}

nlohmann::json rulebook_record(const std::vector<points::LayerRulebook>& layers) {
  nlohmann::json list = nlohmann::json::array();
  for (const points::LayerRulebook& l : layers) {
    const points::ConvSpec& s = l.spec;
    nlohmann::json j;
    j["name"] = l.name;
    j["kind"] = kind_of(l);
    j["kernel"] = s.kernel;
    j["stride"] = s.subm ? std::array<int, 3>{1, 1, 1} : s.stride;
    j["padding"] = s.padding;
    j["dilation"] = s.dilation;
    j["inputs"] = l.rb.inputs;
    j["outputs"] = l.rb.out.count();
    j["out_shape"] = shape3(l.rb.out.shape);
    j["pairs_per_offset"] = l.rb.counts;
    j["pairs"] = l.rb.pairs();
    j["milliseconds"] = l.milliseconds;
    list.push_back(j);
  }
  return list;
}

void add_flags(CLI::App& rulebook, Flags& f) {
  rulebook
      .add_option("--shape", f.rb_shape,
                  "the spatial shape of .npy coordinates (int32 [M,4] batch, z, y, x); required for them")
      ->type_name("Z,Y,X");
  rulebook.add_option("--batch-size", f.rb_batch_size, "batch ids lie in [0, B) (default: the largest id + 1)")
      ->type_name("B");
  rulebook
      .add_option("--voxel-size", f.rb_voxel_size,
                  "the input is a cloud: voxelise it (world origin, floor(p / v)); the shape is its voxel grid's")
      ->type_name("V|X,Y,Z");
  rulebook.add_option("--kernel", f.rb_kernel, "kernel size K or KZ,KY,KX")
      ->capture_default_str()
      ->type_name("K|KZ,KY,KX");
  rulebook.add_option("--stride", f.rb_stride, "stride S or SZ,SY,SX")->capture_default_str()->type_name("S|SZ,SY,SX");
  rulebook.add_option("--padding", f.rb_padding, "padding P or PZ,PY,PX (default 0; --subm: (K / 2) * D)")
      ->type_name("P|PZ,PY,PX");
  rulebook.add_option("--dilation", f.rb_dilation, "dilation D or DZ,DY,DX")
      ->capture_default_str()
      ->type_name("D|DZ,DY,DX");
  rulebook.add_flag("--subm", f.rb_subm, "submanifold: the outputs are the inputs, in input order (stride 1)");
  rulebook.add_flag("--inverse", f.rb_inverse,
                    "the transposed convolution of the spec's forward rulebook (its outputs are the inputs)");
  CLI::Option* layers =
      rulebook
          .add_option("--layers", f.rb_layers,
                      "a JSON list of layers [{\"kernel\", \"stride\", \"padding\", \"dilation\", \"subm\", "
                      "\"inverse\", \"name\"}], chained; arrays prefixed NAME/ (default layerN)")
          ->type_name("FILE.json");
  for (const char* name : {"--kernel", "--stride", "--padding", "--dilation", "--subm", "--inverse"})
    layers->excludes(rulebook.get_option(name));
  rulebook.footer(
      "Example:\n  pc-sample rulebook voxels.npy --shape 41,1600,1408 --kernel 3 --stride 2 --padding 1 -o rb.npz\n"
      "      spconv indice pairs [2, K, N] with counts, CSR pairs and the output coordinates");
}

void plan(const Flags& f, Plan& p) {
  p.rulebook_from_cloud = !f.rb_voxel_size.empty();
  if (p.rulebook_from_cloud) {
    S3D_EXPECTS(f.rb_shape.empty(), "--shape: the voxel grid of --voxel-size gives the shape");
    S3D_EXPECTS(f.rb_batch_size == 0, "--batch-size: a voxelised cloud is one batch (batch id 0)");
    p.voxel.voxel_size = parse_voxel_size("--voxel-size", f.rb_voxel_size);
    p.voxel.origin = points::VoxelOrigin::kWorld;
    validate_flags(p.voxel);
  } else {
    S3D_EXPECTS(!f.rb_shape.empty(),
                "rulebook: --shape Z,Y,X is required for .npy coordinates "
                "(or give a cloud and --voxel-size V)");
    const std::array<int, 3> shape = parse_axes("--shape", f.rb_shape);
    S3D_EXPECTS(apps::split_list(f.rb_shape).size() == 3, "--shape: expected Z,Y,X, got '" + f.rb_shape + "'");
    S3D_EXPECTS(std::all_of(shape.begin(), shape.end(), [](int s) { return s >= 1; }),
                "--shape: sizes must be >= 1, got '" + f.rb_shape + "'");
    std::copy(shape.begin(), shape.end(), p.shape.begin());
  }
  S3D_EXPECTS(f.rb_batch_size >= 0, "--batch-size must be >= 1 (0 = the largest batch id + 1)");
  p.rulebook_batch_size = f.rb_batch_size;
  if (!f.rb_layers.empty()) {
    p.layers = read_layers(f.rb_layers);
    p.chained = true;
    return;
  }
  RulebookLayer layer;
  layer.spec.kernel = parse_axes("--kernel", f.rb_kernel);
  layer.spec.stride = parse_axes("--stride", f.rb_stride);
  layer.spec.padding = parse_axes("--padding", f.rb_padding.empty() ? "0" : f.rb_padding);
  layer.spec.dilation = parse_axes("--dilation", f.rb_dilation);
  layer.spec.subm = f.rb_subm;
  layer.inverse = f.rb_inverse;
  finish_spec(layer.spec);
  p.layers.push_back(layer);
}

std::vector<std::string> outputs(const cli::Item&, cli::ItemContext& ctx, const Plan&) {
  return {ctx.output_path(0, ".rulebook.npz")};
}

/// The format of a rulebook output: .npz (every array) or .npy (the pairs); stdout without --format is .npz.
std::string rulebook_format(const std::string& path, const cli::CommonSettings& s) {
  const std::string fmt = path == "-" && s.format.empty() ? "npz" : cli::format_of(path, s);
  S3D_EXPECTS(fmt == "npz" || fmt == "npy",
              "-o " + path + ": a rulebook is written as .npz (every array) or .npy (pairs)");
  return fmt;
}

void check_outputs(const Plan&, const cli::CommonSettings& s) {
  for (const auto& o : s.outputs) rulebook_format(o, s);
}

void make_engine(Run& run, const Device& device) {
  run.rulebooks = std::make_unique<points::RulebookEngine>(device);
  if (run.plan.rulebook_from_cloud) run.voxels = std::make_unique<points::VoxelEngine>(device);
}

void compute(const cli::Item&, Run& run, Job& job, Result& r) {
  const Plan& p = run.plan;
  const std::string& name = job.in.name;
  if (p.rulebook_from_cloud) {
    r.voxels = run.voxels->voxelize({job.local.data(), job.local.size() / 3}, nullptr, p.voxel);
    try {
      job.coords = points::coords_of(r.voxels);
    } catch (const DataError& e) {
      throw DataError(name + ": " + e.what());
    }
  }
  r.layers = run_layers(*run.rulebooks, p, job.coords, name);
}

void write(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r, nlohmann::json& rec) {
  const Plan& p = run.plan;
  const Job& job = r.job;
  const std::string& main = job.outputs.front();
  const std::string fmt = main == "-" && settings.format.empty() ? "npz" : cli::format_of(main, settings);
  S3D_EXPECTS(fmt == "npz" || fmt == "npy", main + ": a rulebook is written as .npz (every array) or .npy (pairs)");
  if (p.rulebook_from_cloud) {
    rec["format"] = job.in.cloud.meta.format;
    rec["points"] = job.in.cloud.size() + job.in.dropped_invalid;
    rec["dropped_invalid"] = job.in.dropped_invalid;
    rec["grid_origin"] = r.voxels.origin;
  }
  rec["voxels"] = job.coords.count();
  rec["shape"] = job.coords.shape;
  rec["batch_size"] = job.coords.batch_size;
  rec["device"] = run.rulebooks->device().to_string();
  rec["layers"] = rulebook_record(r.layers);
  write_bytes(ctx, main, rulebook_file(r.layers, p.chained, fmt == "npy"));
}

}  // namespace

std::vector<std::int32_t> read_coords_npy(const std::string& path, const std::string& name) {
  io::NpyInt32Array array;
  try {
    array = io::read_npy_int32(path);
  } catch (const IoError& e) {
    // Name the item as the user wrote it and say what a cloud needs instead.
    const std::string what = e.what();
    if (what.find("not an .npy") != std::string::npos)
      throw DataError(name +
                      ": not an .npy file (voxel coordinates are an int32 [M, 4] .npy; a cloud needs "
                      "--voxel-size)");
    throw;
  }
  std::string shape;
  for (const std::uint64_t d : array.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  if (array.shape.size() != 2 || array.shape[1] != 4)
    throw DataError(name + ": voxel coordinates must have shape [M, 4] (batch, z, y, x), got (" + shape + ")");
  return std::move(array.values);  // the values are checked by points::coords_from_rows
}

Command rulebook_command() {
  return {"rulebook",
          "sparse-convolution rulebooks (spconv's indice pairs) of voxel coordinates, one layer or a chain",
          Mode::kRulebook,
          &add_flags,
          &plan,
          &outputs,
          &check_outputs,
          &make_engine,
          &compute,
          &write};
}

}  // namespace s3d::pc_sample
