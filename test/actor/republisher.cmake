# The republisher (msgxctl republish) with the injected clock: paced steps,
# refusals, a job continued after a restart, cancel; on the test PostgreSQL.
mx_add_test(test_republisher SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_republisher.c LIBS mx_testactor PkgConfig::JANSSON LABELS "integration;actor")
