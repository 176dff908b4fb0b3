#include "s3d/cli/merge_reports.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "s3d/core/errors.hpp"

namespace s3d::cli {
namespace {

// Higher wins when two reports hold the same item: a complete record (ok, or skipped for outputs already
// there) over a failure, and anything over an interrupted item's partial one.
int rank(const std::string& status) {
  if (status == "ok") return 3;
  if (status == "failed") return 2;
  if (status == "skipped") return 1;
  return 0;
}

struct Kept {
  nlohmann::json record;
  std::string file;
};

// The settings that differ between the shards of one batch by design.
bool per_run_setting(const std::string& key) {
  static const char* const kKeys[] = {"shard",   "shard-count", "report",   "json",   "skip-existing", "overwrite",
                                      "threads", "prefetch",    "progress", "device", "verbose",       "quiet"};
  return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
}

nlohmann::json batch_settings(const nlohmann::json& summary) {
  nlohmann::json s = summary.value("settings", nlohmann::json::object());
  if (!s.is_object()) return nlohmann::json::object();
  for (auto it = s.begin(); it != s.end();) it = per_run_setting(it.key()) ? s.erase(it) : std::next(it);
  return s;
}

std::size_t index_of(const nlohmann::json& record, const std::string& where) {
  const auto it = record.find("index");
  if (it == record.end() || !it->is_number_unsigned())
    throw DataError(where + ": an item record without a non-negative integer \"index\"");
  return it->get<std::size_t>();
}

}  // namespace

Aggregate sum_of(std::vector<std::string> keys, std::string into, bool always) {
  return [keys = std::move(keys), into = std::move(into), always](const std::vector<nlohmann::json>& items,
                                                                  nlohmann::json& summary) {
    nlohmann::json sums = nlohmann::json::object();
    for (const std::string& key : keys) {
      std::int64_t whole = 0;
      double real = 0.0;
      bool any = false, integral = true;
      for (const auto& item : items) {
        const auto v = item.find(key);
        if (v == item.end() || !v->is_number()) continue;
        any = true;
        if (v->is_number_integer())
          whole += v->get<std::int64_t>();
        else
          integral = false;
        real += v->get<double>();
      }
      if (any || always) sums[key] = integral ? nlohmann::json(whole) : nlohmann::json(real);
    }
    if (into.empty())
      for (auto it = sums.begin(); it != sums.end(); ++it) summary[it.key()] = it.value();
    else if (!sums.empty())
      summary[into] = sums;
  };
}

MergedReport merge_reports(const std::vector<std::string>& paths, const std::string& tool,
                           const std::vector<Aggregate>& aggregates) {
  std::map<std::size_t, Kept> kept;
  std::optional<std::size_t> total_items;
  std::string total_from;
  nlohmann::json settings;
  nlohmann::json reports = nlohmann::json::array();
  nlohmann::json warnings = nlohmann::json::array();
  double seconds_sum = 0.0, seconds_max = 0.0;

  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot open the report");
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    nlohmann::json entry{{"file", path}, {"summary", nullptr}};
    std::size_t line_no = 0, items_in_file = 0;
    try {
      for (std::size_t pos = 0; pos < text.size();) {
        ++line_no;
        const std::size_t end = text.find('\n', pos);
        const bool complete = end != std::string::npos;
        const std::string line = text.substr(pos, complete ? end - pos : std::string::npos);
        pos = complete ? end + 1 : text.size();
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = path + ":" + std::to_string(line_no);
        nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        if (record.is_discarded() || !record.is_object()) {
          if (!complete) {
            warnings.push_back(where + ": an incomplete last line (the run was killed while writing it): ignored");
            continue;
          }
          throw DataError(where + ": not a JSON record (a --report file holds one JSON object per line)");
        }
        const std::string type = record.value("type", "");
        if (type == "summary") {
          const std::string of = record.value("tool", "");
          if (of != tool) throw DataError(where + ": a report of '" + of + "', not of '" + tool + "'");
          const auto total = record.find("total_items");
          if (total == record.end() || !total->is_number_unsigned())
            throw DataError(where + ": a summary without \"total_items\"");
          if (total_items && *total_items != total->get<std::size_t>())
            throw DataError(where + ": a batch of " + std::to_string(total->get<std::size_t>()) + " items, but " +
                            total_from + " has " + std::to_string(*total_items) +
                            ": these reports are not of one batch");
          total_items = total->get<std::size_t>();
          total_from = where;
          const nlohmann::json these = batch_settings(record);
          if (settings.is_null())
            settings = these;
          else if (these != settings)
            warnings.push_back(where + ": settings differ from the first report's (other than the per-run ones)");
          const double secs = record.value("seconds", 0.0);
          seconds_sum += secs;
          seconds_max = std::max(seconds_max, secs);
          nlohmann::json brief = nlohmann::json::object();
          for (const char* key : {"shard", "device", "items", "ok", "failed", "skipped", "not_run", "exit_code",
                                  "interrupted", "seconds"})
            if (record.contains(key)) brief[key] = record[key];
          entry["summary"] = brief;
        } else if (type == "item") {
          const std::size_t index = index_of(record, where);
          // Read again after the file's loop: checked here, where the line is known.
          for (const char* key : {"status", "input", "error"})
            if (record.contains(key) && !record[key].is_string())
              throw DataError(where + ": the item record's \"" + key + "\" is not a string");
          if (!record.contains("status")) throw DataError(where + ": an item record without \"status\"");
          ++items_in_file;
          auto [it, fresh] = kept.try_emplace(index, Kept{record, path});
          if (fresh) continue;
          if (it->second.record.value("input", "") != record.value("input", ""))
            throw DataError(where + ": item " + std::to_string(index) + " is '" + record.value("input", "") +
                            "' here but '" + it->second.record.value("input", "") + "' in " + it->second.file +
                            ": these reports are not of one batch");
          if (rank(record.value("status", "")) >= rank(it->second.record.value("status", "")))
            it->second = Kept{record, path};
        } else {
          throw DataError(where + ": a record of unknown type '" + type + "'");
        }
      }
    } catch (const nlohmann::json::exception& e) {  // a field of the wrong JSON type
      throw DataError(path + ":" + std::to_string(line_no) + ": " + e.what());
    }
    entry["item_records"] = items_in_file;
    if (entry["summary"].is_null())
      warnings.push_back(path + ": no summary record (the run was killed before it ended?)");
    reports.push_back(entry);
  }
  if (!total_items)
    throw DataError("no summary record in any of the " + std::to_string(paths.size()) +
                    " reports: the batch size is unknown");

  MergedReport merged;
  std::size_t ok = 0, failed = 0, skipped = 0, interrupted = 0;
  nlohmann::json failures = nlohmann::json::array();
  std::vector<nlohmann::json> ok_items;
  std::map<std::string, double> stage_seconds;
  for (auto& [index, k] : kept) {
    if (index >= *total_items)
      throw DataError(k.file + ": item " + std::to_string(index) + " is outside a batch of " +
                      std::to_string(*total_items) + " items");
    const std::string status = k.record.value("status", "");
    if (status == "ok") {
      ++ok;
      ok_items.push_back(k.record);
      if (const auto st = k.record.find("stage_seconds"); st != k.record.end() && st->is_object())
        for (auto s = st->begin(); s != st->end(); ++s)
          if (s->is_number()) stage_seconds[s.key()] += s->get<double>();
    } else if (status == "failed") {
      ++failed;
      failures.push_back(
          {{"index", index}, {"input", k.record.value("input", "")}, {"error", k.record.value("error", "")}});
    } else if (status == "interrupted") {
      ++interrupted;
    } else {
      ++skipped;
    }
    merged.items.push_back(std::move(k.record));
  }
  // The items no report holds: a shard never run, or killed before it reached them.
  constexpr std::size_t kListedMissing = 1000;
  nlohmann::json missing_indexes = nlohmann::json::array();
  std::size_t missing = 0;
  for (std::size_t i = 0; i < *total_items; ++i)
    if (!kept.count(i) && ++missing <= kListedMissing) missing_indexes.push_back(i);

  nlohmann::json& s = merged.summary;
  s["type"] = "summary";
  s["tool"] = tool;
  s["merged_reports"] = reports.size();
  s["total_items"] = *total_items;
  s["items"] = kept.size();
  s["ok"] = ok;
  s["failed"] = failed;
  s["skipped"] = skipped;
  s["interrupted"] = interrupted;
  s["missing"] = missing;
  if (missing > 0) s["missing_indexes"] = missing_indexes;
  s["failures"] = failures;
  if (interrupted > 0)
    warnings.push_back(std::to_string(interrupted) +
                       " items hold only an interrupted run's partial record: not done (run them again)");
  merged.exit_code = failed > 0 || missing > 0 || interrupted > 0 ? 1 : 0;
  s["exit_code"] = merged.exit_code;
  s["seconds_sum"] = seconds_sum;
  s["seconds_max"] = seconds_max;
  if (!stage_seconds.empty()) s["stage_seconds"] = stage_seconds;
  s["settings"] = settings;
  s["reports"] = reports;
  if (!warnings.empty()) s["warnings"] = warnings;
  try {
    for (const Aggregate& fn : aggregates) fn(ok_items, s);
  } catch (const nlohmann::json::exception& e) {
    throw DataError("an item record's fields have unexpected types: " + std::string(e.what()));
  }
  return merged;
}

}  // namespace s3d::cli
