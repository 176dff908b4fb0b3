// The item's output folder and files (plan.hpp).
#include <filesystem>
#include <string>
#include <vector>

#include "plan.hpp"

namespace s3d::icp_fuse {

std::string output_folder(const cli::Item& item, cli::ItemContext& ctx, const cli::CommonSettings& s) {
  namespace fs = std::filesystem;
  if (!s.outputs.empty()) return ctx.output_path(0, "");
  std::string name;
  if (item.fields.is_object() && item.fields.contains("name") && item.fields["name"].is_string())
    name = item.fields["name"].get<std::string>();
  if (name.empty()) {
    fs::path in = fs::absolute(item.inputs[0]).lexically_normal();
    if (!in.has_filename()) in = in.parent_path();
    name = fs::is_directory(in) ? in.filename().string() : in.stem().string();
    if (name.empty() || name == "." || name == "..") name = "sequence";
  }
  return (fs::path(s.output_dir) / name).string();
}

std::vector<std::string> planned_outputs(const std::string& folder, const Plan& plan) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  out.push_back((fs::path(folder) / "trajectory.txt").string());
  out.push_back((fs::path(folder) / "frames.jsonl").string());
  if (plan.emit_mesh) out.push_back((fs::path(folder) / "mesh.ply").string());
  if (plan.emit_cloud) out.push_back((fs::path(folder) / "cloud.ply").string());
  if (!plan.save_results.empty()) out.push_back((fs::path(folder) / plan.save_results).string());
  if (plan.emit_plot) {
    out.push_back((fs::path(folder) / "trajectory.png").string());
    if (!plan.eval.empty()) out.push_back((fs::path(folder) / "ape.png").string());
  }
  return out;
}

}  // namespace s3d::icp_fuse
