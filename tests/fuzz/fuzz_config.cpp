// --config (TOML/INI, CLI11's reader behind the frame's ConfigReader): a tool with options of every kind the
// tools use reads the input as its config and prints the effective settings (--print-config, to
// /dev/null), so nothing runs. Tool::run never throws: a memory error or a sanitizer report is the finding.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "s3d/cli/tool.hpp"

namespace {

int silence_stdout() {
  const int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, STDOUT_FILENO);
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace s3d;
  static const int silenced = silence_stdout();
  (void)silenced;
  const std::string path = fuzz::write_temp(data, size, "tool.toml");
  cli::Tool tool("fuzz-tool", "reads a config", cli::ItemSpec{2, {"left", "right"}});
  int disparities = 128;
  double scale = 0.0;
  std::string calib;
  std::vector<std::string> emit;
  bool median = true;
  tool.app().add_option("-D,--disparities", disparities, "disparities");
  tool.app().add_option("--gt-scale", scale, "scale");
  tool.app().add_option("--calib", calib, "calibration");
  tool.app().add_option("--emit", emit, "outputs");
  tool.app().add_flag("--median,!--no-median", median, "median");
  std::string arg0 = "fuzz-tool", arg1 = "--config", arg3 = "--print-config";
  std::vector<char*> argv{arg0.data(), arg1.data(), const_cast<char*>(path.c_str()), arg3.data(), nullptr};
  tool.run(4, argv.data(), [](const cli::Item&, cli::ItemContext&) { return nlohmann::json::object(); });
  return 0;
}
