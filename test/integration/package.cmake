# The manual pages and the Debian package.

# man -l renders every page without a warning; msgxd.conf(5) names every key.
add_test(NAME test_man
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_man.sh ${CMAKE_SOURCE_DIR} $<TARGET_FILE:msgxd>)
set_tests_properties(test_man PROPERTIES LABELS unit TIMEOUT 60)
