// --input-list (tab- or space-separated paths per line) for one- and two-input tools.
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
      cli::items_from_list(in, "list.txt", spec);
    });
  }
  return 0;
}
