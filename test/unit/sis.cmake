mx_add_test(test_tz SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tz.c LIBS mx_core LABELS unit)
mx_add_test(test_sis SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sis.c LIBS mx_domain LABELS unit)
