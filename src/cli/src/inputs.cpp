#include "s3d/cli/inputs.hpp"

#include <filesystem>
#include <optional>
#include <sstream>

#include "s3d/core/errors.hpp"

namespace s3d::cli {

std::string Item::name() const {
  if (inputs.empty()) return "<item " + std::to_string(index + 1) + ">";
  return inputs.front() == "-" ? std::string("<stdin>") : inputs.front();
}

namespace {

std::size_t per_item(const ItemSpec& spec) {
  if (spec.inputs_per_item < 1) throw InvalidArgument("ItemSpec::inputs_per_item must be >= 1");
  return static_cast<std::size_t>(spec.inputs_per_item);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_line(const std::string& line) {
  std::vector<std::string> parts;
  if (line.find('\t') != std::string::npos) {
    // Tab-separated: a path may then hold spaces.
    std::size_t start = 0;
    while (true) {
      const auto tab = line.find('\t', start);
      std::string part = trim(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (!part.empty()) parts.push_back(part);
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
  } else {
    std::istringstream words(line);
    for (std::string w; words >> w;) parts.push_back(w);
  }
  return parts;
}

}  // namespace

std::vector<Item> items_from_paths(const std::vector<std::string>& paths, const ItemSpec& spec) {
  const std::size_t n = per_item(spec);
  if (paths.size() % n != 0)
    throw InvalidArgument("expected inputs in groups of " + std::to_string(n) + ", got " +
                          std::to_string(paths.size()) + " paths");
  std::vector<Item> items;
  for (std::size_t i = 0; i < paths.size(); i += n) {
    Item item;
    item.index = items.size();
    item.inputs.assign(paths.begin() + static_cast<std::ptrdiff_t>(i),
                       paths.begin() + static_cast<std::ptrdiff_t>(i + n));
    item.fields = nlohmann::json::object();
    items.push_back(std::move(item));
  }
  return items;
}

namespace {

// A record's "name" names its outputs under --output-dir: it must stay inside that folder.
void check_name(const nlohmann::json& record, const std::string& where) {
  if (!record.contains("name") || !record["name"].is_string()) return;
  const std::string name = record["name"].get<std::string>();
  const std::filesystem::path p(name);
  bool escapes = name.empty() || p.is_absolute() || p.has_root_path();
  for (const auto& part : p) escapes = escapes || part == "..";
  if (escapes)
    throw InvalidArgument(where + ": \"name\" \"" + name +
                          "\" would write outside the output folder (give a relative name without `..`)");
}

}  // namespace

std::vector<Item> items_from_paths(const std::vector<std::string>& paths, const ItemSpec& spec,
                                   const ExpandArgument& expand) {
  if (!expand) return items_from_paths(paths, spec);
  const std::size_t n = per_item(spec);
  if (spec.manifest_keys.size() != n) throw InvalidArgument("ItemSpec::manifest_keys must name inputs_per_item keys");
  std::vector<Item> items;
  std::vector<std::string> pending;  // paths of the group being filled
  bool expanded_any = false;
  for (const auto& arg : paths) {
    std::optional<std::vector<nlohmann::json>> records;
    if (arg != "-") records = expand(arg);
    if (!records) {
      pending.push_back(arg);
      if (pending.size() == n) {
        Item item;
        item.index = items.size();
        item.inputs = std::move(pending);
        item.fields = nlohmann::json::object();
        items.push_back(std::move(item));
        pending.clear();
      }
      continue;
    }
    expanded_any = true;
    if (!pending.empty())
      throw InvalidArgument(pending.front() + ": an incomplete item before " + arg + " (" + std::to_string(n) +
                            " inputs per item)");
    for (std::size_t k = 0; k < records->size(); ++k) {
      nlohmann::json& record = (*records)[k];
      const std::string where = arg + ": item " + std::to_string(k + 1);
      if (!record.is_object()) throw InvalidArgument(where + ": expected a JSON object");
      Item item;
      item.index = items.size();
      for (const auto& key : spec.manifest_keys) {
        if (!record.contains(key) || !record[key].is_string())
          throw InvalidArgument(where + ": missing string key \"" + key + "\"");
        item.inputs.push_back(record[key].get<std::string>());
      }
      check_name(record, where);
      item.fields = std::move(record);
      items.push_back(std::move(item));
    }
  }
  if (!pending.empty()) {
    if (!expanded_any) return items_from_paths(paths, spec);  // its message
    throw InvalidArgument(pending.front() + ": an incomplete item at the end (" + std::to_string(n) +
                          " inputs per item)");
  }
  return items;
}

std::vector<Item> items_from_list(std::istream& in, const std::string& source, const ItemSpec& spec) {
  const std::size_t n = per_item(spec);
  std::vector<Item> items;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> parts = n == 1 ? std::vector<std::string>{t} : split_line(t);
    if (parts.size() != n)
      throw InvalidArgument(source + ":" + std::to_string(line_no) + ": expected " + std::to_string(n) +
                            " paths, found " + std::to_string(parts.size()));
    Item item;
    item.index = items.size();
    item.inputs = std::move(parts);
    item.fields = nlohmann::json::object();
    items.push_back(std::move(item));
  }
  if (in.bad()) throw IoError(source + ": read error");
  return items;
}

std::vector<Item> items_from_manifest(std::istream& in, const std::string& source, const ItemSpec& spec) {
  const std::size_t n = per_item(spec);
  if (spec.manifest_keys.size() != n) throw InvalidArgument("ItemSpec::manifest_keys must name inputs_per_item keys");
  std::vector<Item> items;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (trim(line).empty()) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded()) throw InvalidArgument(where + ": not valid JSON");
    if (!record.is_object()) throw InvalidArgument(where + ": expected a JSON object");
    // Records written by another s3d tool's --json: only successful items made an output.
    const bool s3d_record = record.contains("type") && record["type"].is_string();
    if (s3d_record) {
      const std::string type = record["type"].get<std::string>();
      if (type == "summary") continue;
      if (type == "item" && record.contains("status") && record["status"] != "ok") continue;
    }
    check_name(record, where);
    Item item;
    item.index = items.size();
    const bool chained = s3d_record && n == 1 && record["type"] == "item" && record.contains("output") &&
                         record["output"].is_string() && record["output"] != "-";
    if (chained) {
      // The previous tool's output is this tool's input (its "input" was the previous tool's input).
      item.inputs.push_back(record["output"].get<std::string>());
    } else {
      for (const auto& key : spec.manifest_keys) {
        if (!record.contains(key) || !record[key].is_string())
          throw InvalidArgument(where + ": missing string key \"" + key + "\"");
        item.inputs.push_back(record[key].get<std::string>());
      }
    }
    item.fields = std::move(record);
    items.push_back(std::move(item));
  }
  if (in.bad()) throw IoError(source + ": read error");
  return items;
}

std::vector<Item> select_shard(const std::vector<Item>& all, const Shard& shard) {
  std::vector<Item> mine;
  for (const auto& item : all)
    if (shard.contains(item.index)) mine.push_back(item);
  return mine;
}

}  // namespace s3d::cli
