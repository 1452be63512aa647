# The manual pages and the Debian package.

# man -l renders every page without a warning; msgxd.conf(5) names every key.
add_test(NAME test_man
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_man.sh ${CMAKE_SOURCE_DIR} $<TARGET_FILE:msgxd>)
set_tests_properties(test_man PROPERTIES LABELS unit TIMEOUT 60)

# Builds the .deb, lintian, dpkg -i, systemd-analyze verify, the installed
# msgxd as user msgx against the test servers, msgxctl as a member of
# msgx-admin, dpkg --purge. Needs root. Only in a build without sanitizers:
# the package ships plain binaries (test/run-all: its first configuration).
if(NOT MX_ASAN AND NOT MX_UBSAN AND NOT MX_TSAN)
  mx_add_test(test_package SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_package.c
    LABELS "package;needs-servers" TIMEOUT 900)
  set_property(TEST test_package APPEND PROPERTY ENVIRONMENT "MX_CPACK=${CMAKE_CPACK_COMMAND}")
  add_dependencies(test_package msgxd msgxctl msgx-gen package-files)
endif()
