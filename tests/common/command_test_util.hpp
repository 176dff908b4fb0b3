#pragma once
// End-to-end tests of the command-line tools: run a built executable through /bin/sh with its standard
// output and error captured, and read files back. Shared by tests/cli and the stereo batch test.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace s3d::test {

/// Whole file as bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// `text` as one single-quoted shell word.
inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Exit status and captured streams of one command.
struct CommandResult {
  int code = -1;  ///< exit status; -1 when the command did not exit normally
  std::string out, err;

  /// Lines of stderr, without the notices a machine may add whatever the input (no GPU, libpng).
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);)
      if (line.find("warning: no CUDA device") == std::string::npos &&
          line.find("libpng warning") == std::string::npos && line.find("running on the CPU") == std::string::npos)
        lines.push_back(line);
    return lines;
  }
  /// stdout as JSON lines (empty lines skipped).
  std::vector<nlohmann::json> records() const {
    std::vector<nlohmann::json> records;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) records.push_back(nlohmann::json::parse(line));
    return records;
  }
};

/// Runs `command` (shell words, may hold pipes) with stdout and stderr captured through two files in
/// `scratch_dir`, which are removed afterwards.
inline CommandResult run_command(const std::string& command, const std::filesystem::path& scratch_dir) {
  const std::filesystem::path out = scratch_dir / ".stdout", err = scratch_dir / ".stderr";
  const std::string full = command + " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
  const int status = std::system(("/bin/sh -c " + shell_quote(full)).c_str());
  CommandResult result;
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out);
  result.err = slurp(err);
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return result;
}

}  // namespace s3d::test
