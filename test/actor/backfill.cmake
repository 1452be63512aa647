# Processed marks (actors/mx_backfill, db/mx_backfill) and the daily
# maintenance jobs (actors/mx_jobs, db/mx_jobs), on the test PostgreSQL and
# MariaDB with the injected clock.
mx_add_test(test_backfill SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backfill.c LIBS mx_testactor LABELS "integration;actor")
mx_add_test(test_jobs SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_jobs.c LIBS mx_testactor LABELS "integration;actor")
