#include "s3d/cli/shard.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <utility>

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

Shard checked(long index, long count, const std::string& origin, std::string source) {
  if (count > std::numeric_limits<int>::max())
    throw InvalidArgument(origin + ": the shard count " + std::to_string(count) + " is too large");
  if (count < 1) throw InvalidArgument(origin + ": the shard count must be >= 1, got " + std::to_string(count));
  if (index < 0 || index >= count)
    throw InvalidArgument(origin + ": shard index " + std::to_string(index) + " is outside 0.." +
                          std::to_string(count - 1));
  return Shard{static_cast<int>(index), static_cast<int>(count), std::move(source)};
}

// A variable that is set and not empty, or nullptr.
const char* env_value(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

// --shard-count, else S3D_SHARD_COUNT, else 0 (not stated).
int stated_count(const GetEnv& getenv, int shard_count) {
  if (shard_count > 0) return shard_count;
  const char* env_count = env_value(getenv, "S3D_SHARD_COUNT");
  if (!env_count) return 0;
  const long count = parse_int(env_count, "S3D_SHARD_COUNT");
  if (count < 1) throw InvalidArgument("S3D_SHARD_COUNT must be >= 1, got " + std::to_string(count));
  return static_cast<int>(count);
}

// The count of a scheduler that gives only an index.
long count_for(int stated, const std::string& index_variable) {
  if (stated > 0) return stated;
  throw InvalidArgument("--shard auto: " + index_variable +
                        " is set but the shard count is not: give --shard-count N or set S3D_SHARD_COUNT");
}

Shard from_slurm(const GetEnv& getenv, int shard_count) {
  long array_index = 0, array_count = 1;
  const char* array_id = env_value(getenv, "SLURM_ARRAY_TASK_ID");
  if (array_id && shard_count > 0) {
    // The array's size stated: a task re-submitted alone (`sbatch --array=3`) is still shard 3 of N.
    array_index = parse_int(array_id, "SLURM_ARRAY_TASK_ID");
    array_count = shard_count;
    checked(array_index, array_count, "--shard auto (Slurm array, --shard-count " + std::to_string(shard_count) + ")",
            "");
  } else if (array_id) {
    const char* slurm_count = env_value(getenv, "SLURM_ARRAY_TASK_COUNT");
    if (!slurm_count)
      throw InvalidArgument("--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
    const char* slurm_min = env_value(getenv, "SLURM_ARRAY_TASK_MIN");
    const long min = slurm_min ? parse_int(slurm_min, "SLURM_ARRAY_TASK_MIN") : 0;
    array_index = parse_int(array_id, "SLURM_ARRAY_TASK_ID") - min;
    array_count = parse_int(slurm_count, "SLURM_ARRAY_TASK_COUNT");
    checked(array_index, array_count, "--shard auto (Slurm array)", "");
  }
  long task = 0, tasks = 1;
  const char* step_tasks = env_value(getenv, "SLURM_STEP_NUM_TASKS");
  if (step_tasks) {
    const char* procid = env_value(getenv, "SLURM_PROCID");
    if (!procid) throw InvalidArgument("--shard auto: SLURM_STEP_NUM_TASKS is set but SLURM_PROCID is not");
    task = parse_int(procid, "SLURM_PROCID");
    tasks = parse_int(step_tasks, "SLURM_STEP_NUM_TASKS");
    checked(task, tasks, "--shard auto (Slurm step)", "");
  }
  const std::string source = array_id ? (tasks > 1 ? "slurm-array+step" : "slurm-array") : "slurm-step";
  return checked(array_index * tasks + task, array_count * tasks, "--shard auto (Slurm)", source);
}

}  // namespace

Shard parse_shard(const std::string& text, const GetEnv& getenv, int shard_count) {
  if (text.empty()) return Shard{};
  if (text == "auto") {
    const int stated = stated_count(getenv, shard_count);
    // A one-task step (`srun -n 1`, or the batch script's own step) adds nothing; an array alone counts.
    const char* step_tasks = env_value(getenv, "SLURM_STEP_NUM_TASKS");
    if (env_value(getenv, "SLURM_ARRAY_TASK_ID") || (step_tasks && std::string(step_tasks) != "1"))
      return from_slurm(getenv, stated);
    if (const char* k8s_index = env_value(getenv, "JOB_COMPLETION_INDEX"))
      return checked(parse_int(k8s_index, "JOB_COMPLETION_INDEX"), count_for(stated, "JOB_COMPLETION_INDEX"),
                     "--shard auto (JOB_COMPLETION_INDEX)", "kubernetes");
    if (const char* seq = env_value(getenv, "PARALLEL_SEQ"))
      return checked(parse_int(seq, "PARALLEL_SEQ") - 1, count_for(stated, "PARALLEL_SEQ"),
                     "--shard auto (GNU parallel: PARALLEL_SEQ - 1)", "gnu-parallel");
    return Shard{0, 1, "auto-none"};
  }
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw InvalidArgument("--shard: expected i/n (e.g. 0/8) or auto, got '" + text + "'");
  return checked(parse_int(text.substr(0, slash), "--shard index"), parse_int(text.substr(slash + 1), "--shard count"),
                 "--shard " + text, "flag");
}

Shard parse_shard(const std::string& text, int shard_count) {
  return parse_shard(
      text, [](const char* name) -> const char* { return std::getenv(name); }, shard_count);
}

}  // namespace s3d::cli
