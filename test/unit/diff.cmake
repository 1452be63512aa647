# msgx-diff's mapping, normalisers and report, without servers.
mx_add_test(test_diff SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_diff.c LIBS mx_diff PkgConfig::JANSSON LABELS unit)
