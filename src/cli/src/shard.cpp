#include "s3d/cli/shard.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "s3d/core/errors.hpp"

namespace s3d::cli {
namespace {

// Whole-string decimal parse; `what` names the value in the error message.
long parse_int(const std::string& text, const std::string& what) {
  if (text.empty()) throw InvalidArgument(what + " is empty");
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw InvalidArgument(what + " is not an integer: '" + text + "'");
  return v;
}

Shard checked(long index, long count, const std::string& origin) {
  if (count < 1) throw InvalidArgument(origin + ": the shard count must be >= 1, got " + std::to_string(count));
  if (index < 0 || index >= count)
    throw InvalidArgument(origin + ": shard index " + std::to_string(index) + " is outside 0.." +
                          std::to_string(count - 1));
  return Shard{static_cast<int>(index), static_cast<int>(count)};
}

}  // namespace

Shard parse_shard(const std::string& text, const GetEnv& getenv, int shard_count) {
  if (text.empty()) return Shard{};
  if (text == "auto") {
    const char* slurm_id = getenv("SLURM_ARRAY_TASK_ID");
    if (slurm_id && *slurm_id) {
      const char* slurm_count = getenv("SLURM_ARRAY_TASK_COUNT");
      if (!slurm_count || !*slurm_count)
        throw InvalidArgument("--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
      const char* slurm_min = getenv("SLURM_ARRAY_TASK_MIN");
      const long min = slurm_min && *slurm_min ? parse_int(slurm_min, "SLURM_ARRAY_TASK_MIN") : 0;
      return checked(parse_int(slurm_id, "SLURM_ARRAY_TASK_ID") - min, parse_int(slurm_count, "SLURM_ARRAY_TASK_COUNT"),
                     "--shard auto (Slurm)");
    }
    const char* k8s_index = getenv("JOB_COMPLETION_INDEX");
    if (k8s_index && *k8s_index) {
      long count = shard_count;
      if (count <= 0) {
        const char* env_count = getenv("S3D_SHARD_COUNT");
        if (!env_count || !*env_count)
          throw InvalidArgument(
              "--shard auto: JOB_COMPLETION_INDEX is set but the shard count is not: give --shard-count N "
              "or set S3D_SHARD_COUNT");
        count = parse_int(env_count, "S3D_SHARD_COUNT");
      }
      return checked(parse_int(k8s_index, "JOB_COMPLETION_INDEX"), count, "--shard auto (JOB_COMPLETION_INDEX)");
    }
    return Shard{};
  }
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw InvalidArgument("--shard: expected i/n (e.g. 0/8) or auto, got '" + text + "'");
  return checked(parse_int(text.substr(0, slash), "--shard index"), parse_int(text.substr(slash + 1), "--shard count"),
                 "--shard " + text);
}

Shard parse_shard(const std::string& text, int shard_count) {
  return parse_shard(
      text, [](const char* name) -> const char* { return std::getenv(name); }, shard_count);
}

}  // namespace s3d::cli
