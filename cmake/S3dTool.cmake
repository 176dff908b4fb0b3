# s3d_add_tool(NAME SOURCES a.cpp ... [LIBS s3d::x ...] [NO_INSTALL])
#
# One executable on the CLI frame (s3d::cli). Once it is built, its man page (help2man over --help and
# --version; skipped with a message when help2man is missing) and its bash/zsh/fish completion scripts
# (from `NAME --generate-completion SHELL`) are generated into ${CMAKE_CURRENT_BINARY_DIR}/NAME-doc/ and
# installed with it:
#   bin/NAME
#   share/man/man1/NAME.1
#   share/bash-completion/completions/NAME
#   share/zsh/site-functions/_NAME
#   share/fish/vendor_completions.d/NAME.fish
# NO_INSTALL: build and generate, install nothing (test-only tools).
#
# This file is also a CMake script (cmake -DS3D_TOOL_STEP=... -P S3dTool.cmake), used by the build steps
# above so they need no shell redirection.

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED S3D_TOOL_STEP)
  # Generating docs is not a test: a sanitizer build's leak report at exit must not fail the build.
  if(NOT DEFINED ENV{ASAN_OPTIONS})
    set(ENV{ASAN_OPTIONS} "detect_leaks=0")
  endif()
  if(S3D_TOOL_STEP STREQUAL "completion")
    execute_process(COMMAND "${EXE}" --generate-completion "${SHELL_NAME}"
                    OUTPUT_FILE "${OUT}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      file(REMOVE "${OUT}")
      message(FATAL_ERROR "${EXE} --generate-completion ${SHELL_NAME} failed (${rc})")
    endif()
  elseif(S3D_TOOL_STEP STREQUAL "man")
    # The NAME section of the page is the first line of --help (the tool's one-line summary).
    execute_process(COMMAND "${EXE}" --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${EXE} --help failed (${rc})")
    endif()
    string(REGEX REPLACE "\n.*" "" summary "${help}")
    execute_process(COMMAND "${HELP2MAN}" --no-info --no-discard-stderr "--name=${summary}"
                            "--output=${OUT}" "${EXE}"
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      file(REMOVE "${OUT}")
      message(FATAL_ERROR "help2man ${EXE} failed (${rc})")
    endif()
  endif()
  return()
endif()

find_program(S3D_HELP2MAN help2man)
if(NOT S3D_HELP2MAN)
  message(STATUS "s3d: help2man not found, the tools' man pages will not be generated")
endif()
set(S3D_TOOL_SCRIPT "${CMAKE_CURRENT_LIST_FILE}")

function(s3d_add_tool name)
  cmake_parse_arguments(ARG "NO_INSTALL" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE s3d::cli ${ARG_LIBS})

  set(doc "${CMAKE_CURRENT_BINARY_DIR}/${name}-doc")
  set(bash_file "${doc}/bash/${name}")
  set(zsh_file "${doc}/zsh/_${name}")
  set(fish_file "${doc}/fish/${name}.fish")
  set(man_file "${doc}/man1/${name}.1")
  set(outputs "")
  foreach(shell bash zsh fish)
    set(out "${${shell}_file}")
    get_filename_component(out_dir "${out}" DIRECTORY)
    add_custom_command(OUTPUT "${out}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
      COMMAND ${CMAKE_COMMAND} -DS3D_TOOL_STEP=completion "-DEXE=$<TARGET_FILE:${name}>" -DSHELL_NAME=${shell}
              "-DOUT=${out}" -P "${S3D_TOOL_SCRIPT}"
      DEPENDS ${name} "${S3D_TOOL_SCRIPT}"
      COMMENT "${name}: ${shell} completion"
      VERBATIM)
    list(APPEND outputs "${out}")
  endforeach()
  if(S3D_HELP2MAN)
    add_custom_command(OUTPUT "${man_file}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${doc}/man1"
      COMMAND ${CMAKE_COMMAND} -DS3D_TOOL_STEP=man "-DEXE=$<TARGET_FILE:${name}>" "-DHELP2MAN=${S3D_HELP2MAN}"
              "-DOUT=${man_file}" -P "${S3D_TOOL_SCRIPT}"
      DEPENDS ${name} "${S3D_TOOL_SCRIPT}"
      COMMENT "${name}: man page (help2man)"
      VERBATIM)
    list(APPEND outputs "${man_file}")
  endif()
  add_custom_target(${name}-doc ALL DEPENDS ${outputs})

  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    install(FILES "${bash_file}" DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions")
    install(FILES "${zsh_file}" DESTINATION "${CMAKE_INSTALL_DATADIR}/zsh/site-functions")
    install(FILES "${fish_file}" DESTINATION "${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d")
    if(S3D_HELP2MAN)
      install(FILES "${man_file}" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
    endif()
  endif()
endfunction()
