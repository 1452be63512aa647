mx_add_test(test_metrics_unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_metrics.c LIBS mx_actors LABELS unit)
