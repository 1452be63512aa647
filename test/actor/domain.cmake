mx_add_test(test_domain SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_domain.c LIBS mx_testactor LABELS "integration;actor")
