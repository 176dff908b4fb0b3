#pragma once
// pc-sample rulebook: voxel coordinates read from an int32 .npy, the plan's layers run on the run's
// RulebookEngine (chained: a regular layer's outputs are the next layer's inputs), and the arrays as one
// .npz (a stored zip of .npy files) or the pairs as one .npy (docs/PC-SAMPLE.md, "Rulebooks").
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plan.hpp"
#include "s3d/points/rulebook.hpp"

namespace s3d::pc_sample {

/// Reads `path`, an int32 .npy of shape [M, 4] (batch, z, y, x); points::coords_from_rows checks the values.
/// @throws DataError naming `name` (not an .npy, another dtype or shape, truncated).
std::vector<std::int32_t> read_coords_npy(const std::string& path, const std::string& name);

/// The plan's layers from `in` (points::build_chain). @throws DataError naming `name`.
std::vector<points::LayerRulebook> run_layers(points::RulebookEngine& engine, const Plan& plan,
                                              const points::SparseCoords& in, const std::string& name);

/// The output file: `npy` the first layer's pairs [2, K, N_max] only, else the .npz of every layer's arrays
/// (`chained`: prefixed `NAME/`).
std::string rulebook_file(const std::vector<points::LayerRulebook>& layers, bool chained, bool npy);

/// The record's `layers` list.
nlohmann::json rulebook_record(const std::vector<points::LayerRulebook>& layers);

}  // namespace s3d::pc_sample
