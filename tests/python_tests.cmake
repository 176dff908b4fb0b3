# Python end-to-end tests, discovered: every tests/<folder>/**/*_test.py of a folder that this configuration
# builds becomes one CTest per unittest method, named <folder>_<file name less _test.py>.<method> and labelled
# <folder>. Each runs `python3 FILE Class.method` with S3D_DATA_DIR and the folder's directory property
# S3D_PYTHON_TEST_ENVIRONMENT (VAR=value entries: the tools' paths the folder's tests need). A test that calls
# skipTest() shows as skipped. Adding a file or a method re-runs CMake (the glob and each file are
# configure dependencies); nothing is listed by hand.
file(GLOB_RECURSE s3d_python_test_files CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_test.py")
get_property(s3d_test_folders DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" PROPERTY SUBDIRECTORIES)
set(s3d_python_tests_here "")
foreach(file ${s3d_python_test_files})
  file(RELATIVE_PATH relative "${CMAKE_CURRENT_SOURCE_DIR}" "${file}")
  string(REGEX REPLACE "/.*" "" folder "${relative}")
  # only the folders this configuration builds (cli is absent without S3D_BUILD_IO)
  if("${CMAKE_CURRENT_SOURCE_DIR}/${folder}" IN_LIST s3d_test_folders)
    list(APPEND s3d_python_tests_here "${file}")
  endif()
endforeach()
if(s3d_python_tests_here)
  find_package(Python3 COMPONENTS Interpreter)
  if(NOT Python3_Interpreter_FOUND)
    message(WARNING "s3d: python3 not found, the Python end-to-end tests are not registered")
    # One stand-in, so ctest shows the gap: it fails where CI=true (a CI image must have python3) and is
    # skipped elsewhere.
    add_test(NAME python_tests_need_python3 COMMAND ${CMAKE_COMMAND} -P "${CMAKE_CURRENT_LIST_DIR}/python_missing.cmake")
    set_tests_properties(python_tests_need_python3 PROPERTIES SKIP_REGULAR_EXPRESSION "s3d: skipped:")
    return()
  endif()
endif()

set(s3d_python_test_names "")
foreach(file ${s3d_python_tests_here})
  file(RELATIVE_PATH relative "${CMAKE_CURRENT_SOURCE_DIR}" "${file}")
  string(REGEX REPLACE "/.*" "" folder "${relative}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  get_property(environment DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/${folder}" PROPERTY S3D_PYTHON_TEST_ENVIRONMENT)
  set(environment "S3D_DATA_DIR=${S3D_DATA_DIR}" ${environment})
  if(S3D_SANITIZE)
    list(APPEND environment "S3D_SANITIZED=1")  # tests that run the tools on real data take less of it there
  endif()
  get_filename_component(stem "${file}" NAME)
  string(REGEX REPLACE "_test\\.py$" "" stem "${stem}")
  # Top-level classes and their `def test_...` methods, in file order.
  file(STRINGS "${file}" lines REGEX "^(class [A-Za-z_][A-Za-z0-9_]*|    def test_[A-Za-z0-9_]+)[(:]")
  set(class "")
  set(methods 0)
  foreach(line ${lines})
    if(line MATCHES "^class ([A-Za-z_][A-Za-z0-9_]*)")
      set(class "${CMAKE_MATCH_1}")
      continue()
    endif()
    string(REGEX MATCH "test_[A-Za-z0-9_]+" method "${line}")
    set(name "${folder}_${stem}.${method}")
    if(name IN_LIST s3d_python_test_names)
      message(FATAL_ERROR "s3d: ${relative}: a second test named ${method}: CTest names must be unique")
    endif()
    list(APPEND s3d_python_test_names "${name}")
    add_test(NAME "${name}" COMMAND ${Python3_EXECUTABLE} "${file}" "${class}.${method}")
    set_tests_properties("${name}" PROPERTIES LABELS "${folder}" TIMEOUT 300
                         ENVIRONMENT "${environment}"
                         SKIP_REGULAR_EXPRESSION "OK \\(skipped=1\\)")
    math(EXPR methods "${methods} + 1")
  endforeach()
  if(methods EQUAL 0)
    message(FATAL_ERROR "s3d: ${relative}: no unittest method (`    def test_...`) found")
  endif()
endforeach()
