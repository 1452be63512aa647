mx_add_test(test_crash SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_crash.c LIBS mx_db LABELS integration TIMEOUT 900)
add_dependencies(test_crash msgxd msgx-gen)

# msgxd-hooked: msgxd with the test faults of test/harness/mx_test_hooks
# (MSGX_TEST_FAULT), for the crash-loop test. Never installed.
add_executable(msgxd-hooked ${PROJECT_SOURCE_DIR}/cmd/msgxd.c)
target_compile_definitions(msgxd-hooked PRIVATE MX_TEST_HOOKS)
target_link_libraries(msgxd-hooked PRIVATE mx_test_hooks mx_actors mx_kafka mx_core mx_warnings)

mx_add_test(test_crash_loop SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_crash_loop.c LIBS mx_db mx_test_hooks LABELS integration
            TIMEOUT 600)
add_dependencies(test_crash_loop msgxd-hooked msgx-gen)
