// s3d-frame-demo: a tiny tool on the CLI frame, used only by the frame's end-to-end tests.
// It "processes" a text file by upper-casing it. Markers in the input drive the failure paths:
//   FAIL        -> DataError (the item fails, the batch goes on)
//   NAMEDFAIL   -> DataError whose message starts with the item's name (`<stdin>` for `-`)
//   TRANSIENT   -> DeviceUnavailable (exit 75, the batch stops)
//   BADWRITE   -> IoError thrown by the writer after it wrote part of the temp file
//   TMPBAD     -> IoError thrown by the writer, naming its temp file (the frame renames it in the message)
//   SECONDBAD  -> with --second, the second output's writer fails (after the first output was written)
// --second also writes a second output (slot 1, default `.second.txt`); --folder-out writes a folder of three
// files (part1.txt..part3.txt, default `.d`) instead, and BADWRITE then fails it at the second file.
// --write-sleep-ms N sleeps inside the writer, with the temp file half written (second-signal test).
// Subcommand `lower [--prefix P]` lower-cases instead (subcommands take the common options and inputs too).
// A folder given as a positional argument stands for its *.txt files, in name order (Tool::expand_arguments).
// --sleep-ms N makes every item slow (for the kill test); --bad-start makes on_start throw InvalidArgument.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/parallel.hpp"

int main(int argc, char** argv) {
  s3d::cli::Tool tool("s3d-frame-demo", "Upper-case text files (a test tool for the s3d CLI frame)",
                      s3d::cli::ItemSpec{1, {"input"}});
  int sleep_ms = 0;
  int write_sleep_ms = 0;
  bool bad_start = false;
  bool second = false;
  bool folder_out = false;
  tool.app().add_flag("--second", second, "also write a second output (slot 1)");
  tool.app().add_flag("--folder-out", folder_out, "write a folder of three files instead of a file");
  tool.app().add_option("--sleep-ms", sleep_ms, "sleep this long in every item")->capture_default_str();
  tool.app().add_option("--write-sleep-ms", write_sleep_ms, "sleep this long inside the writer");
  tool.app().add_flag("--bad-start", bad_start, "fail in on_start with InvalidArgument");
  std::string prefix;
  CLI::App* lower = tool.app().add_subcommand("lower", "lower-case instead");
  lower->add_option("--prefix", prefix, "text put before the output");
  tool.format_help("output text format: txt (the demo's only one)");
  tool.add_example("s3d-frame-demo notes.txt -o notes.up.txt", "upper-case one file");
  tool.add_example("s3d-frame-demo --manifest m.jsonl --output-dir out --json > done.jsonl",
                   "a batch with JSON Lines records");
  tool.add_example("cat notes.txt | s3d-frame-demo - -o -", "stdin to stdout");

  tool.on_start([&](const s3d::Device&) {
    if (bad_start) throw s3d::InvalidArgument("--bad-start was given");
  });
  tool.expand_arguments([](const std::string& arg) -> std::optional<std::vector<nlohmann::json>> {
    namespace fs = std::filesystem;
    if (!fs::is_directory(arg)) return std::nullopt;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(arg))
      if (e.path().extension() == ".txt") files.push_back(e.path().string());
    if (files.empty()) throw s3d::DataError(arg + ": no .txt files");
    std::sort(files.begin(), files.end());
    std::vector<nlohmann::json> records;
    for (const auto& f : files) records.push_back({{"input", f}, {"folder", arg}});
    return records;
  });
  const std::vector<std::string> parts{"part1.txt", "part2.txt", "part3.txt"};
  tool.outputs_of([&](const s3d::cli::Item&, s3d::cli::ItemContext& ctx) {
    if (folder_out) {
      std::vector<std::string> files;
      for (const auto& part : parts) files.push_back(ctx.output_path(0, ".d") + "/" + part);
      return files;
    }
    std::vector<std::string> outs{ctx.output_path(0, ".up.txt")};
    if (second) outs.push_back(ctx.output_path(1, ".second.txt"));
    return outs;
  });
  std::size_t total_chars = 0;
  tool.on_summary([&](nlohmann::json& summary) { summary["total_chars"] = total_chars; });

  return tool.run(argc, argv, [&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    const std::string in_path = ctx.readable_path(item.inputs[0]);
    std::ifstream in(in_path, std::ios::binary);
    if (!in) throw s3d::IoError(item.inputs[0] + ": cannot open");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("TRANSIENT") != std::string::npos) throw s3d::DeviceUnavailable("simulated lost GPU");
    if (text.find("NAMEDFAIL") != std::string::npos)
      throw s3d::DataError(item.name() + ": contains the failure marker NAMEDFAIL");
    if (text.find("FAIL") != std::string::npos) throw s3d::DataError("contains the failure marker FAIL");
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    for (auto& c : text)
      c = static_cast<char>(lower->parsed() ? std::tolower(static_cast<unsigned char>(c))
                                            : std::toupper(static_cast<unsigned char>(c)));
    if (lower->parsed()) text = prefix + text;
    if (folder_out) {
      ctx.write_folder_atomically(ctx.output_path(0, ".d"), [&](const std::string& dir) {
        for (const auto& part : parts) {
          if (part == parts[1] && text.find("BADWRITE") != std::string::npos)
            throw s3d::IoError(part + ": simulated write failure");
          std::ofstream(dir + "/" + part, std::ios::binary) << text;
        }
      });
      return nlohmann::json{{"chars", text.size()}};
    }
    const std::string out = ctx.output_path(0, ".up.txt");
    ctx.write_atomically(out, [&](const std::string& tmp) {
      std::ofstream o(tmp, std::ios::binary);
      if (text.find("TMPBAD") != std::string::npos) throw s3d::IoError(tmp + ": simulated write failure");
      const bool fail = text.find("BADWRITE") != std::string::npos;
      o << text.substr(0, text.size() / 2) << std::flush;
      if (fail) throw s3d::IoError(out + ": simulated write failure");
      if (write_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(write_sleep_ms));
      o << text.substr(text.size() / 2);
      if (!o) throw s3d::IoError(out + ": write failed");
    });
    if (second) {
      ctx.write_atomically(ctx.output_path(1, ".second.txt"), [&](const std::string& tmp) {
        std::ofstream(tmp, std::ios::binary) << text;
        if (text.find("SECONDBAD") != std::string::npos) throw s3d::IoError("simulated failure of the second output");
      });
    }
    total_chars += text.size();
    return nlohmann::json{
        {"chars", text.size()}, {"device", ctx.device().to_string()}, {"cpu_threads", s3d::cpu_threads()}};
  });
}
