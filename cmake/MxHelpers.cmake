# mx_add_test(NAME SOURCES src... [LIBS lib...] LABELS unit|actor|integration [TIMEOUT s])
#
# Integration and actor tests that need servers get the mx_servers fixture:
# ctest starts PostgreSQL and MariaDB once (deploy/local/mx-servers) and
# stops them afterwards, whatever the outcome.
function(mx_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE mx_warnings mx_testenv ${T_LIBS} PkgConfig::CMOCKA)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES
    LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "MX_TEST_ENV=${MX_TEST_ENV_FILE};MX_BUILD_DIR=${CMAKE_BINARY_DIR};MX_SOURCE_DIR=${CMAKE_SOURCE_DIR};ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1;TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${CMAKE_SOURCE_DIR}/test/tsan.supp")
  if("integration" IN_LIST T_LABELS OR "needs-servers" IN_LIST T_LABELS)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED mx_servers)
  endif()
endfunction()
