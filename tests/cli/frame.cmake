# frame tests: unit tests of the frame's pieces, and end-to-end runs of a demo tool built on it.
include(${PROJECT_SOURCE_DIR}/cmake/S3dTool.cmake)
s3d_add_tool(s3d-frame-demo SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/frame/frame_demo.cpp NO_INSTALL)

s3d_add_test(cli_frame_unit SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/frame_unit_test.cpp LIBS s3d::cli LABELS "cli")

# End-to-end: one CTest per test method of frame_e2e_test.py, driving s3d-frame-demo.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(S3D_FRAME_E2E_TESTS
    test_help_ends_with_examples_and_lists_exit_codes test_help_ends_with_one_newline test_version_format
    test_print_config_round_trip test_print_config_has_every_flag_and_reads_them_back
    test_generate_completion test_build_generated_completions_and_man_page
    test_usage_errors_exit_2_with_one_line test_device_cuda_without_gpu_exits_75
    test_auto_device_warns_once_and_runs_on_cpu test_transient_error_stops_the_batch_with_75
    test_bad_input_one_line_exit_1_no_output test_failed_writer_leaves_no_temp_and_no_output
    test_failed_item_does_not_stop_the_batch_unless_fail_fast
    test_json_records_and_summary_schema test_threads_reach_the_cpu_backends test_dash_pipes_stdin_to_stdout test_broken_pipe_is_quiet_exit_0
    test_output_templates test_existing_outputs_overwrite_and_skip test_input_list
    test_manifest_and_chaining_records test_folder_argument_expands_into_items test_subcommand_takes_common_options_and_inputs test_shard_partitions_a_manifest_exactly
    test_sigterm_mid_batch_then_skip_existing_resumes test_sigint_mid_batch_exits_130 test_second_signal_exits_at_once_removing_temps
    test_progress_only_on_a_terminal test_colour_on_a_terminal_unless_no_color test_verbosity_levels)
  foreach(t ${S3D_FRAME_E2E_TESTS})
    add_test(NAME cli_frame_e2e.${t}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/frame_e2e_test.py
                     $<TARGET_FILE:s3d-frame-demo> ${CMAKE_CURRENT_BINARY_DIR}/s3d-frame-demo-doc -k ${t})
    set_tests_properties(cli_frame_e2e.${t} PROPERTIES LABELS "cli" TIMEOUT 300)
  endforeach()
else()
  message(WARNING "s3d: python3 not found, the CLI frame's end-to-end tests are not registered")
endif()

# The frame's staged items (load / handle / write) with fake stages; it reaches the scheduler's private header.
s3d_add_test(cli_frame_stages SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/frame_stages_test.cpp LIBS s3d::cli LABELS "cli")
target_include_directories(cli_frame_stages PRIVATE ${PROJECT_SOURCE_DIR}/src/cli/src)
