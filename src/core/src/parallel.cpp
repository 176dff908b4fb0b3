#include "s3d/core/parallel.hpp"

#include <omp.h>

namespace s3d {
void set_cpu_threads(int n) { omp_set_num_threads(n > 0 ? n : omp_get_num_procs()); }
int cpu_threads() { return omp_get_max_threads(); }
}  // namespace s3d
