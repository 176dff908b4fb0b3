#pragma once
// The three ways a batch is given (docs/CLI.md, "Inputs"): positional files, --input-list, --manifest.
// Each returns the items in input order with `Item::index` set to that position (0-based); --shard selects
// among them afterwards.
#include <istream>
#include <string>
#include <vector>

#include "s3d/cli/shard.hpp"
#include "s3d/cli/tool.hpp"

namespace s3d::cli {

/// Groups positional paths by `spec.inputs_per_item` (`a.png b.png c.png d.png` -> (a,b) (c,d)).
/// @throws InvalidArgument when the count is not a multiple of inputs_per_item.
std::vector<Item> items_from_paths(const std::vector<std::string>& paths, const ItemSpec& spec);

/// The same, where `expand` (when set) may turn one path into whole items (Tool::expand_arguments): each path
/// but `-` is offered to it in order; the records it returns become items (inputs = their manifest_keys),
/// the paths it declines are grouped by inputs_per_item. @throws InvalidArgument when a group of paths is
/// cut by an expanded path or left incomplete at the end, or a record lacks a key; whatever `expand` throws.
std::vector<Item> items_from_paths(const std::vector<std::string>& paths, const ItemSpec& spec,
                                   const ExpandArgument& expand);

/// --input-list: one item per line, `inputs_per_item` paths separated by tabs (by runs of spaces when the
/// line has no tab). Blank lines and lines starting with `#` are skipped. `source` names the list in
/// messages. @throws InvalidArgument naming `source:line` for a line with the wrong number of paths.
std::vector<Item> items_from_list(std::istream& in, const std::string& source, const ItemSpec& spec);

/// --manifest: JSON Lines, one object per line (blank lines skipped). An item's inputs are the string
/// values of `spec.manifest_keys`, in order; the whole object is kept in `Item::fields`.
/// Chaining: lines written by another s3d tool's `--json` are accepted too. Its `"type":"summary"` line and
/// its items whose `"status"` is not `"ok"` are skipped (they made no output); for a one-input tool, an
/// item record (`"type":"item"`) with a file `"output"` gives that output as the input. So
/// `a --json ... | b --manifest -` feeds the outputs of `a` to `b`.
/// @throws InvalidArgument naming `source:line` for invalid JSON, a non-object, or a missing key.
std::vector<Item> items_from_manifest(std::istream& in, const std::string& source, const ItemSpec& spec);

/// The items of `all` that belong to `shard` (their `index` is kept).
std::vector<Item> select_shard(const std::vector<Item>& all, const Shard& shard);

}  // namespace s3d::cli
