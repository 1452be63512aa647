# The repository stands alone (test_self_contained.sh), and the consumer
# contract's validator tells a wrong payload from a right one (test_schemas).
add_test(NAME test_self_contained
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_self_contained.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(test_self_contained PROPERTIES LABELS unit TIMEOUT 60)
mx_add_test(test_schemas SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_schemas.c LIBS mx_domain LABELS unit)
