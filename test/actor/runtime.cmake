mx_add_test(test_control SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_control.c LIBS mx_actors LABELS "actor;needs-servers")
