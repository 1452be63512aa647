# The shared MariaDB mailbox (db/mx_mailbox), against the test MariaDB.
mx_add_test(test_mailbox SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mailbox.c LIBS mx_db LABELS integration)
