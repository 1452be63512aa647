# Requests upstream without I/O (domain/mx_request): encoding, SEQN wrap,
# airport time, the degraded RESP match.
mx_add_test(test_request SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_request.c LIBS mx_domain LABELS unit)
