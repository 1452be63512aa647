mx_add_test(test_pipeline SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pipeline.c LIBS mx_testactor LABELS "integration;actor")
