#pragma once
// pc-sample's subcommands as a table (COLMAP's exe/colmap.cc: a name and a function per command): each one's
// flags, how they become the plan, the outputs an item gets, the usage checks of those outputs, its engine, its
// compute on one loaded cloud, and what it writes with its record fields. One file per subcommand:
// fps.cpp, neighbors.cpp (ball, knn), interp.cpp, voxel.cpp, rulebook.cpp.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job.hpp"
#include "plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {

struct Command {
  const char* name;
  const char* summary;
  Mode mode;
  /// Binds the subcommand's flags to `f`.
  void (*add_flags)(CLI::App& sub, Flags& f);
  /// The subcommand's part of the plan. @throws InvalidArgument naming the flag.
  void (*plan)(const Flags& f, Plan& p);
  /// The item's output paths, the main one first.
  std::vector<std::string> (*outputs)(const cli::Item& item, cli::ItemContext& ctx, const Plan& p);
  /// Outputs no item could write: usage errors before any item runs.
  void (*check_outputs)(const Plan& p, const cli::CommonSettings& settings);
  /// Makes the run's engine(s) on `device`.
  void (*make_engine)(Run& run, const Device& device);
  /// One job on the run's engine. @throws DataError naming the input (what the data cannot give).
  void (*compute)(const cli::Item& item, Run& run, Job& job, Result& r);
  /// Writes the outputs of `r` and adds the subcommand's record fields to `rec`.
  void (*write)(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r,
                nlohmann::json& rec);
};

Command fps_command();
Command ball_command();
Command knn_command();
Command interp_command();
Command voxel_command();
Command rulebook_command();

/// The table, in the order of the tool's help.
const std::vector<Command>& commands();
/// The command of `mode`.
const Command& command_of(Mode mode);

// ---- Shared by the subcommands' write stages.

/// The format an output is written in: --format, else the path's extension; "" for stdout without --format.
std::string output_format(const std::string& path, const cli::CommonSettings& settings);
/// The record's fields of the input cloud: format, points (in the file), dropped_invalid, origin.
void cloud_fields(nlohmann::json& rec, const Job& job);
/// The record's fields for what a selection did to the non-point elements.
nlohmann::json elements_json(const points::ElementChanges& changes);
/// --emit preview: the input seen from above, `marks` (x y z, local coordinates) in red.
void write_preview(cli::ItemContext& ctx, const std::string& path, const Job& job, const std::vector<float>& marks,
                   const char* what);
/// Every output of the several written: `-o NAME.npy` and the names derived from it. @throws InvalidArgument.
void require_npy_names(const cli::CommonSettings& settings);

}  // namespace s3d::pc_sample
