mx_add_test(test_daemon SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon.c LIBS PkgConfig::JANSSON PkgConfig::PQ PkgConfig::CZMQ LABELS integration)
add_dependencies(test_daemon msgxd msgxctl)
