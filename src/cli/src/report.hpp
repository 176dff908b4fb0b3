#pragma once
// JSON Lines records (--json on stdout, --report FILE): one per item, then one summary.
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace s3d::cli::detail {

class Records {
 public:
  /// `to_stdout`: --json (and stdout is not carrying data). `report_path`: --report, empty = none; the
  /// file is created now (truncated). @throws IoError when it cannot be created.
  Records(bool to_stdout, const std::string& report_path);
  /// Writes one record as one line to each destination and flushes (a killed run keeps what it wrote).
  /// @throws BrokenPipe when stdout's reader went away.
  void write(const nlohmann::json& record);
  bool any() const { return to_stdout_ || report_.is_open(); }

 private:
  bool to_stdout_;
  std::string report_path_;
  std::ofstream report_;
};

}  // namespace s3d::cli::detail
