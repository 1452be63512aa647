# msgxctl as an operator meets it: help for every verb, every verb's bad
# arguments, an exit code for each way a call fails, human and JSON output
# against a running daemon.
mx_add_test(test_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cli.c LIBS PkgConfig::JANSSON PkgConfig::PQ PkgConfig::CZMQ LABELS integration)
add_dependencies(test_cli msgxd msgxctl)
# msgxd's log lines: the text limit, UTF-8, configuration problems as JSON,
# and native journal entries read back from a private systemd-journald.
mx_add_test(test_journal SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_journal.c LIBS mx_core PkgConfig::JANSSON PkgConfig::PQ PkgConfig::SYSTEMD LABELS integration)
add_dependencies(test_journal msgxd)
# The log level of a running msgxd: msgxctl log-level and SIGHUP, the role
# kept; msgxd's command line errors as JSON lines.
mx_add_test(test_reload SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reload.c LIBS PkgConfig::JANSSON PkgConfig::CZMQ LABELS integration)
add_dependencies(test_reload msgxd msgxctl)
