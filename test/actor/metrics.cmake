# GET /health and GET /metrics: the metrics and http actors in-process
# against the test PostgreSQL, MariaDB and a Kafka mock cluster.
mx_add_test(test_metrics SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_metrics.c LIBS mx_testactor LABELS integration)
