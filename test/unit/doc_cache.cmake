mx_add_test(test_doc_cache SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_doc_cache.c LIBS mx_domain LABELS unit)
