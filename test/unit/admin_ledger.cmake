mx_add_test(test_admin_ledger SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_admin_ledger.c LIBS mx_actors LABELS unit)
