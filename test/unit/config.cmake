mx_add_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c LIBS mx_core LABELS unit)
