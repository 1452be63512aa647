mx_add_test(test_gen SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen.c LIBS mx_gen PkgConfig::XML2 LABELS unit)
