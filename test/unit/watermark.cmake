mx_add_test(test_watermark SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_watermark.c LIBS mx_domain LABELS unit)
