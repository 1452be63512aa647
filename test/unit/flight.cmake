mx_add_test(test_flight SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flight.c LIBS mx_domain LABELS unit)
