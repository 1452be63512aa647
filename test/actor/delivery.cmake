# Delivery to Kafka: dispatcher (KAFKA:msg) and schd-aggregator (KAFKA:schd)
# against real PostgreSQL and the Kafka mock cluster, read back by a consumer.
mx_add_test(test_delivery
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_delivery.c
  LIBS mx_testactor mx_testevent PkgConfig::RDKAFKA
  LABELS integration)
# Its lost-acknowledgement cases hinge on delivery timeouts of a few seconds:
# run it alone so a loaded machine cannot stretch them.
set_tests_properties(test_delivery PROPERTIES RUN_SERIAL TRUE)
# msgxctl replay --events: dead events sent again, through control, the
# dispatcher, the schd-aggregator and the real msgxctl.
mx_add_test(test_event_replay
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_event_replay.c
  LIBS mx_testactor mx_testevent PkgConfig::RDKAFKA PkgConfig::JANSSON
  LABELS integration)
add_dependencies(test_event_replay msgxctl)
set_tests_properties(test_event_replay PROPERTIES RUN_SERIAL TRUE)
# A shadow instance: the shared mailbox untouched, the production topics
# empty, the suffixed ones filled (or none with msgx.shadow-publish=false).
mx_add_test(test_shadow
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shadow.c
  LIBS mx_testactor mx_gen PkgConfig::RDKAFKA PkgConfig::JANSSON
  LABELS integration)
