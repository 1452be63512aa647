# Schema migrations and the libpq helpers, against the test PostgreSQL.
mx_add_test(test_migrate
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_migrate.c
  LIBS mx_db Threads::Threads
  LABELS integration)
mx_add_test(test_pg
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pg.c
  LIBS mx_db
  LABELS integration)
