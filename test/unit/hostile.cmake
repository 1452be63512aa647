# Hostile input at unit level: the compat entry's request checks, the SIS
# codec's error lines on hostile bytes, and the fuzz smoke: each fuzz
# target's entry point (fuzz/) run once over the seed corpus by a plain
# main, so the ordinary ASan/UBSan build covers the harnesses too.
mx_add_test(test_compat_body SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compat_body.c LIBS mx_domain LABELS unit)
mx_add_test(test_hostile_codec SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hostile_codec.c LIBS mx_domain LABELS unit)

# The libFuzzer configuration (MX_FUZZ) builds the real fuzzers instead.
if(NOT MX_FUZZ)
  set(mx_fuzz_dir ${PROJECT_SOURCE_DIR}/fuzz)
  set(mx_fuzz_seeds ${CMAKE_BINARY_DIR}/fuzz-seeds)
  add_executable(fuzz_seed_maker ${mx_fuzz_dir}/make_corpus.c)
  target_link_libraries(fuzz_seed_maker PRIVATE mx_warnings mx_gen mx_proto)
  add_test(NAME fuzz_seeds
    COMMAND fuzz_seed_maker ${mx_fuzz_seeds}/sis ${mx_fuzz_seeds}/compat
            ${PROJECT_SOURCE_DIR}/test/data/sis ${mx_fuzz_seeds}/admin)
  set_tests_properties(fuzz_seeds PROPERTIES FIXTURES_SETUP mx_fuzz_seeds LABELS unit TIMEOUT 120)
  foreach(target fuzz_sis_decode fuzz_compat_body fuzz_config fuzz_admin_request)
    add_executable(${target}_smoke ${mx_fuzz_dir}/${target}.c ${mx_fuzz_dir}/fuzz_driver.c)
    target_link_libraries(${target}_smoke PRIVATE mx_warnings mx_domain)
  endforeach()
  target_link_libraries(fuzz_admin_request_smoke PRIVATE mx_proto)
  add_test(NAME fuzz_sis_decode_smoke
    COMMAND fuzz_sis_decode_smoke ${mx_fuzz_seeds}/sis ${mx_fuzz_dir}/regressions/sis)
  add_test(NAME fuzz_compat_body_smoke COMMAND fuzz_compat_body_smoke ${mx_fuzz_seeds}/compat)
  # The config loader: the sample configurations and the regressions.
  add_test(NAME fuzz_config_smoke
    COMMAND fuzz_config_smoke ${PROJECT_SOURCE_DIR}/deploy/config ${mx_fuzz_dir}/regressions/config)
  # The admin request decoder: the requests of every verb and the regressions.
  add_test(NAME fuzz_admin_request_smoke
    COMMAND fuzz_admin_request_smoke ${mx_fuzz_seeds}/admin ${mx_fuzz_dir}/regressions/admin)
  set_tests_properties(fuzz_sis_decode_smoke fuzz_compat_body_smoke fuzz_admin_request_smoke PROPERTIES
    FIXTURES_REQUIRED mx_fuzz_seeds)
  set_tests_properties(fuzz_sis_decode_smoke fuzz_compat_body_smoke fuzz_config_smoke fuzz_admin_request_smoke
    PROPERTIES
    LABELS unit TIMEOUT 300
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()
# The codec's shape bounds on hostile shapes up to 16 MiB (tools/mx_shape).
mx_add_test(test_codec_bounds SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_codec_bounds.c LIBS mx_domain mx_shape mx_gen LABELS unit TIMEOUT 300)
