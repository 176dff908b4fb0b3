#pragma once
// CPU threading for the CPU backends (OpenMP). The CLI's `--threads N` lands here.
namespace s3d {
/// Sets the thread count of the CPU backends; n <= 0 means all cores.
void set_cpu_threads(int n);
/// Threads the CPU backends will use.
int cpu_threads();
}  // namespace s3d
