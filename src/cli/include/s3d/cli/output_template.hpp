#pragma once
// Output name templates with the placeholders of fd and GNU parallel (docs/CLI.md, "Output templates").
#include <cstddef>
#include <string>

namespace s3d::cli {

/// True when `text` holds at least one placeholder ({} {/} {.} {/.} {//} {#}).
bool has_placeholder(const std::string& text);

/// Expands the placeholders of `templ` for one item:
/// - `{}`   the input path as given                     `data/left/000001.png`
/// - `{/}`  its basename                                `000001.png`
/// - `{.}`  the path without its last extension         `data/left/000001`
/// - `{/.}` the basename without its last extension     `000001`
/// - `{//}` the parent folder (`.` when there is none)  `data/left`
/// - `{#}`  the 1-based item number in the full input order (before --shard), so a name never depends
///          on the shard that produced it
/// Anything else, including an unknown `{x}`, is copied literally. The input `-` (stdin) expands as if it
/// were named `stdin`. Never throws (beyond std::bad_alloc).
std::string expand_template(const std::string& templ, const std::string& input, std::size_t number);

}  // namespace s3d::cli
