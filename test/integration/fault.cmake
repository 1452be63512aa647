# Fault suite: msgx-fault (test/fault/) runs the whole pipeline under a
# seeded fault schedule with its own servers and Kafka mock cluster, then
# audits. test/fault/run-fault runs the full size; ctest runs a short one.
add_executable(msgx-fault ${PROJECT_SOURCE_DIR}/test/fault/msgx_fault.c)
target_link_libraries(msgx-fault PRIVATE mx_warnings mx_testenv mx_gen mx_db mx_kafka mx_core)
add_dependencies(msgx-fault msgxd)

mx_add_test(test_fault_short SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fault.c LABELS integration TIMEOUT 660)
add_dependencies(test_fault_short msgx-fault msgxd)
# It starts and stops its own servers and loads the machine: alone.
set_tests_properties(test_fault_short PROPERTIES RUN_SERIAL TRUE)
