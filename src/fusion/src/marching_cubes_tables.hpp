#pragma once
// Internal: the marching cubes tables (host memory; the CUDA backend copies them to constant memory).
#include <cstdint>

namespace s3d::fusion::detail {

/// Per cube case, the triangles as triples of cube edges (tsdf_math.hpp cube_edge), -1 terminated, in the
/// order the mesh emits them.
extern const std::int8_t kMcTriangles[256][16];
/// Per cube case, the number of triangles of kMcTriangles.
extern const std::uint8_t kMcTriangleCount[256];

}  // namespace s3d::fusion::detail
