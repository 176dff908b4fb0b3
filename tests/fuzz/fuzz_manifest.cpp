// --manifest (JSON Lines, incl. chained --json records) for one- and two-input tools.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "s3d/cli/inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace s3d;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const cli::ItemSpec& spec : {cli::ItemSpec{1, {"input"}}, cli::ItemSpec{2, {"left", "right"}}}) {
    fuzz::expect_parsed_or_rejected([&] {
      std::istringstream in(text);
      const auto items = cli::items_from_manifest(in, "manifest.jsonl", spec);
      cli::select_shard(items, cli::Shard{1, 2});
    });
  }
  return 0;
}
