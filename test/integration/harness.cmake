# The harness's own test: real servers, Kafka mock cluster, child processes.
mx_add_test(test_harness
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_harness.c
  LIBS PkgConfig::PQ PkgConfig::MARIADB PkgConfig::RDKAFKA
  LABELS integration)
