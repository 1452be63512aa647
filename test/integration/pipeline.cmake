mx_add_test(test_crash SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_crash.c LIBS mx_db LABELS integration TIMEOUT 900)
add_dependencies(test_crash msgxd msgx-gen)
