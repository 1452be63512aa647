# Verified TLS to PostgreSQL, the mailbox and Kafka, against the servers
# of the mx_servers_tls fixture (started with a CA of their own).
mx_add_test(test_tls SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tls.c LIBS mx_db mx_kafka LABELS integration)
set_property(TEST test_tls APPEND PROPERTY ENVIRONMENT "MX_TEST_ENV=${MX_TEST_TLS_ENV_FILE}")
set_tests_properties(test_tls PROPERTIES FIXTURES_REQUIRED mx_servers_tls)
