# Tracking part of s3d::fusion: the engine, parameters, depth pre-processing and projective ICP.
set(S3D_FUSION_TRACKING_CPU
    ${CMAKE_CURRENT_LIST_DIR}/src/params.cpp
    ${CMAKE_CURRENT_LIST_DIR}/src/fusion_engine.cpp
    ${CMAKE_CURRENT_LIST_DIR}/src/tracking_cpu.cpp
    ${CMAKE_CURRENT_LIST_DIR}/src/depth_preprocess_cpu.cpp
    ${CMAKE_CURRENT_LIST_DIR}/src/icp_reduce_cpu.cpp)
set(S3D_FUSION_TRACKING_CUDA
    ${CMAKE_CURRENT_LIST_DIR}/src/tracking_cuda.cu
    ${CMAKE_CURRENT_LIST_DIR}/src/depth_preprocess_cuda.cu
    ${CMAKE_CURRENT_LIST_DIR}/src/icp_reduce_cuda.cu
    ${CMAKE_CURRENT_LIST_DIR}/src/icp_attempt_cuda.cu)
# The bilateral filter's row loops and the ICP tile loop vectorise only when comparisons and divisions may be
# evaluated speculatively, and (their AVX2 variants) when jump threading does not split the loop body on its
# selects; values and rounding are unchanged (no fast-math, no contraction), so the CPU still matches the CUDA
# backend bit for bit.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/src/depth_preprocess_cpu.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/src/icp_reduce_cpu.cpp PROPERTIES
                            COMPILE_OPTIONS "-fno-trapping-math;-fno-thread-jumps")
