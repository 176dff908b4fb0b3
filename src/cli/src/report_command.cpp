// `TOOL report REPORT...`: every tool's subcommand that merges the --report files of a batch's shards.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "s3d/cli/atomic_file.hpp"
#include "s3d/cli/merge_reports.hpp"
#include "s3d/core/errors.hpp"
#include "tool_impl.hpp"

namespace s3d::cli {

int Tool::Impl::run_report(int argc, char** argv) {
  CLI::App cmd(
      "merges the --report files (JSON Lines) of one batch's shards and re-runs into one report: every "
      "item once (ok over failed over skipped), the items no report holds, and the batch's summary",
      name + " report");
  std::vector<std::string> paths;
  std::string output = "-";
  bool summary_only = false;
  cmd.add_option("reports", paths, "the --report files (one per shard or attempt; order decides ties)")->required();
  cmd.add_option("-o,--output", output,
                 "the merged report (JSON Lines: item records by index, then the summary); "
                 "- = stdout")
      ->capture_default_str();
  cmd.add_flag("--summary-only", summary_only, "write only the summary record");
  cmd.footer(
      "Exit codes:\n  0    every item of the batch is ok or skipped\n  1    some items failed or are in no report\n"
      "  2    usage error, or a report that is unreadable, malformed or of another batch");
  try {
    cmd.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    print_help(cmd.help());
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return cmd.exit(e, std::cout, std::cerr);
    print_error("report: " + std::string(e.what()) + " (see " + name + " report --help)");
    return kExitUsage;
  }
  try {
    const MergedReport merged = merge_reports(paths, name, aggregate_fns);
    std::string text;
    if (!summary_only)
      for (const auto& item : merged.items)
        text += item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    text += merged.summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (output == "-") {
      std::cout << text << std::flush;
    } else {
      write_atomically(output, [&](const std::string& tmp) {
        std::ofstream out(tmp, std::ios::binary);
        out << text;
        out.close();
        if (!out) throw io_error_with_reason(output, "write failed");
      });
    }
    if (const auto w = merged.summary.find("warnings"); w != merged.summary.end())
      for (const auto& line : *w) print_error("report: warning: " + line.get<std::string>());
    std::fprintf(stderr, "%s report: %zu reports, %zu of %zu items: %zu ok, %zu failed, %zu skipped, %zu missing\n",
                 name.c_str(), paths.size(), merged.summary["items"].get<std::size_t>(),
                 merged.summary["total_items"].get<std::size_t>(), merged.summary["ok"].get<std::size_t>(),
                 merged.summary["failed"].get<std::size_t>(), merged.summary["skipped"].get<std::size_t>(),
                 merged.summary["missing"].get<std::size_t>());
    return merged.exit_code;
  } catch (const std::exception& e) {
    print_error("report: " + std::string(e.what()));
    return kExitUsage;
  }
}

}  // namespace s3d::cli
