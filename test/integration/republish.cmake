# The reference topic and msgxctl republish through the real binaries: the
# samples' reference messages and a generated day processed by msgxd, the
# topics read back from a Kafka mock cluster of the test's own, msgxd
# killed in the middle of a job.
mx_add_test(test_republish SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_republish.c LIBS mx_db PkgConfig::JANSSON PkgConfig::PQ PkgConfig::CZMQ LABELS integration TIMEOUT 300)
add_dependencies(test_republish msgxd msgxctl msgx-gen)
