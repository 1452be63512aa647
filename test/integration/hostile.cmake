# Hostile input against the real msgxd: XML attacks through the mailbox,
# encodings, HTTP attacks on the compat entry, unsafe prod settings.
mx_add_test(test_hostile SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hostile.c LIBS mx_shape PkgConfig::JANSSON PkgConfig::PQ PkgConfig::CZMQ LABELS integration TIMEOUT 300)
add_dependencies(test_hostile msgxd msgxctl)
