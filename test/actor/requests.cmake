# Requests upstream: the req_track repository and RESP guard (db/mx_requests),
# COUTMSGS (db/mx_mailbox) and the requests actor (actors/mx_requests), on the
# test PostgreSQL and MariaDB with the injected clock.
mx_add_test(test_requests SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests.c LIBS mx_testactor LABELS "integration;actor")
