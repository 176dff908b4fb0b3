#include "report.hpp"

#include "s3d/core/errors.hpp"
#include "signals.hpp"

namespace s3d::cli::detail {

Records::Records(bool to_stdout, const std::string& report_path) : to_stdout_(to_stdout), report_path_(report_path) {
  if (!report_path.empty()) {
    report_.open(report_path, std::ios::out | std::ios::trunc);
    if (!report_) throw IoError(report_path + ": cannot create the report file");
  }
}

void Records::write(const nlohmann::json& record) {
  // Invalid UTF-8 in a path must not abort the batch: replace it rather than throw.
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (report_.is_open()) {
    report_ << line;
    report_.flush();
    if (!report_) throw io_error_with_reason(report_path_, "write failed");
  }
  if (to_stdout_) write_stdout(line.data(), line.size());
}

}  // namespace s3d::cli::detail
