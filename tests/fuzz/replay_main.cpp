// Replays fuzz inputs through a target's LLVMFuzzerTestOneInput in an ordinary build (gcc, cpu and asan
// presets): every file of the folders given (seeds, and the crash inputs fuzzing found, kept as regressions).
// A missing folder is skipped; no input at all is a failure (the test would prove nothing).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!fs::is_directory(argv[i])) continue;
    for (const auto& entry : fs::recursive_directory_iterator(argv[i]))
      if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cerr << "replay " << file.string() << " (" << bytes.size() << " bytes)\n";
    // An empty vector's data() may be null; libFuzzer never passes null, so neither do we.
    static const std::uint8_t kNone = 0;
    LLVMFuzzerTestOneInput(bytes.empty() ? &kNone : bytes.data(), bytes.size());
  }
  std::cerr << files.size() << " inputs replayed\n";
  return files.empty() ? 1 : 0;
}
