# s3d_add_library(NAME SOURCES a.cpp ... [CUDA_SOURCES k.cu ...] [PUBLIC dep ...] [PRIVATE dep ...]
#                 [NO_HEADERS])
#
# One library of the package: target s3d_NAME, alias s3d::NAME, exported and installed as NAME (s3dTargets),
# C++17. CUDA_SOURCES are built only when CUDA is (.cu files whole-program: no separable compilation). Its public
# headers are the `include/` folder beside the calling CMakeLists.txt (installed as they are); NO_HEADERS: a
# library whose headers live in another library's folder.
function(s3d_add_library name)
  cmake_parse_arguments(ARG "NO_HEADERS" "" "SOURCES;CUDA_SOURCES;PUBLIC;PRIVATE" ${ARGN})
  set(target s3d_${name})
  add_library(${target} ${ARG_SOURCES})
  if(S3D_WITH_CUDA AND ARG_CUDA_SOURCES)
    target_sources(${target} PRIVATE ${ARG_CUDA_SOURCES})
    set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
  add_library(s3d::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME ${target})
  if(NOT ARG_NO_HEADERS)
    target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
  if(ARG_PUBLIC)
    target_link_libraries(${target} PUBLIC ${ARG_PUBLIC})
  endif()
  if(ARG_PRIVATE)
    target_link_libraries(${target} PRIVATE ${ARG_PRIVATE})
  endif()
  target_compile_features(${target} PUBLIC cxx_std_17)
  install(TARGETS ${target} EXPORT s3dTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()
