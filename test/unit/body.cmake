mx_add_test(test_body SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_body.c LIBS mx_domain LABELS unit)
