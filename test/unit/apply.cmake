mx_add_test(test_apply SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_apply.c LIBS mx_domain LABELS unit)
