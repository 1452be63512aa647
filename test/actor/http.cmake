# The compat HTTP entry (actors/mx_http), against the test MariaDB and
# PostgreSQL.
mx_add_test(test_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_http.c LIBS mx_testactor LABELS "integration;actor")
