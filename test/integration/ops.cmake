# The operations surface through the real binaries: /health and /metrics
# over HTTP (active, standby, PostgreSQL refusing connections), msgxctl show
# and msgxctl status --watch in a tmux pane.
mx_add_test(test_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ops.c LIBS PkgConfig::JANSSON PkgConfig::PQ PkgConfig::CZMQ LABELS integration)
add_dependencies(test_ops msgxd msgxctl)
