mx_add_test(test_core SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core.c LIBS mx_core mx_proto LABELS unit)
