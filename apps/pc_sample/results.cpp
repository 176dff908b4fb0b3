// pc-sample's write stage: the subcommand writes the item's outputs and its fields; the timings complete the record.
#include <chrono>

#include "command.hpp"
#include "job.hpp"

namespace s3d::pc_sample {

nlohmann::json write_result(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r) {
  const auto t0 = std::chrono::steady_clock::now();
  nlohmann::json rec;
  // An item an earlier launch computed still records its compute stage, as 0 s: the launch's time is its first
  // item's, so the summary's total counts it once.
  if (r.taken) ctx.add_stage_seconds("compute", 0.0);
  {
    cli::StageTimer timer(ctx, "write");
    run.command->write(ctx, settings, run, r, rec);
  }
  rec["seconds_read"] = r.job.seconds_read;
  rec["seconds_compute"] = r.seconds_compute;
  if (r.batch > 1) rec["batch"] = r.batch;
  rec["seconds_write"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rec;
}

}  // namespace s3d::pc_sample
