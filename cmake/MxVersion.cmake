# The version has one source, project(VERSION) in CMakeLists.txt: the code
# (msgxd/msgxctl --version, the msgx_build_info gauge) reads it from the
# generated mx_version.h, and the package takes the same value. The commit
# is taken at configure time ("unknown" outside a git checkout).
set(MX_COMMIT unknown)
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    OUTPUT_VARIABLE mx_git_commit OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE mx_git_result ERROR_QUIET)
  if(mx_git_result EQUAL 0 AND mx_git_commit MATCHES "^[0-9a-f]+$")
    set(MX_COMMIT ${mx_git_commit})
  endif()
endif()
set(MX_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${CMAKE_CURRENT_LIST_DIR}/mx_version.h.in ${MX_GENERATED_DIR}/mx_version.h @ONLY)
