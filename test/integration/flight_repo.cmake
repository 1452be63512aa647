# The flight repository (db/mx_flight_repo): flight state, outbox events,
# snapshot log and reference data, against the test PostgreSQL.
mx_add_test(test_flight_repo
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flight_repo.c
  LIBS mx_db
  LABELS integration)
