# msgx-gen against a real MariaDB mailbox; runs the built binary.
mx_add_test(test_gen_mailbox SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_mailbox.c LIBS mx_gen LABELS integration)
add_dependencies(test_gen_mailbox msgx-gen)
