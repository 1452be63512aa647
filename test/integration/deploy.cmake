# Deployment kit (deploy/): config samples generated from the key table,
# the systemd unit, and the metric names used by the dashboard and alerts.

# deploy/config/msgxd-{dev,prod}.zpl are `msgxd --config-sample PROFILE`:
# built here, compared with the committed copies by a test, refreshed by
# the update-docs target like docs/configuration.md.
set(MX_SAMPLE_DIR ${CMAKE_BINARY_DIR}/deploy/config)
set(MX_SAMPLE_FILES)
foreach(profile dev prod)
  add_custom_command(OUTPUT ${MX_SAMPLE_DIR}/msgxd-${profile}.zpl
    COMMAND ${CMAKE_COMMAND} -E make_directory ${MX_SAMPLE_DIR}
    COMMAND msgxd --config-sample ${profile} > ${MX_SAMPLE_DIR}/msgxd-${profile}.zpl
    DEPENDS msgxd ${CMAKE_SOURCE_DIR}/core/mx_config.def ${CMAKE_SOURCE_DIR}/cmd/msgxd.c
    COMMENT "Generating deploy/config/msgxd-${profile}.zpl")
  list(APPEND MX_SAMPLE_FILES ${MX_SAMPLE_DIR}/msgxd-${profile}.zpl)
  add_test(NAME deploy_config_${profile}_fresh
    COMMAND ${CMAKE_COMMAND} -E compare_files ${MX_SAMPLE_DIR}/msgxd-${profile}.zpl
                                              ${CMAKE_SOURCE_DIR}/deploy/config/msgxd-${profile}.zpl)
  set_tests_properties(deploy_config_${profile}_fresh PROPERTIES LABELS unit)
endforeach()
add_custom_target(deploy-config-samples ALL DEPENDS ${MX_SAMPLE_FILES})
add_custom_target(update-deploy-config
  COMMAND ${CMAKE_COMMAND} -E copy ${MX_SAMPLE_FILES} ${CMAKE_SOURCE_DIR}/deploy/config/
  DEPENDS deploy-config-samples)
add_dependencies(update-docs update-deploy-config)

# The committed samples: every key, advice for every key, and the prod
# sample passes --check-config once its placeholders come from the
# environment.
mx_add_test(test_deploy_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_deploy_config.c
  LIBS mx_core LABELS unit)
add_dependencies(test_deploy_config msgxd)

# Every metric name in deploy/grafana and deploy/prometheus exists: scraped
# from a running msgxd, or (for series created on first use) named in the code.
mx_add_test(test_deploy_metrics SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_deploy_metrics.c
  LIBS PkgConfig::CZMQ LABELS integration)
add_dependencies(test_deploy_metrics msgxd)

add_test(NAME test_deploy_unit
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_deploy_unit.sh ${CMAKE_SOURCE_DIR} $<TARGET_FILE:msgxd>)
set_tests_properties(test_deploy_unit PROPERTIES LABELS unit TIMEOUT 60)

# The alert rules: promtool (Debian prometheus, from deploy/install-deps)
# checks their syntax and runs their unit tests. Without promtool the
# tests fail, saying so: never skipped.
find_program(MX_PROMTOOL promtool)
if(MX_PROMTOOL)
  add_test(NAME test_alert_rules_check
    COMMAND ${MX_PROMTOOL} check rules ${CMAKE_SOURCE_DIR}/deploy/prometheus/alerts.yaml)
  add_test(NAME test_alert_rules
    COMMAND ${MX_PROMTOOL} test rules ${CMAKE_CURRENT_LIST_DIR}/prometheus/alerts-test.yaml)
else()
  foreach(name test_alert_rules_check test_alert_rules)
    add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E echo
      "promtool not found: deploy/install-deps installs the Debian package prometheus")
    set_tests_properties(${name} PROPERTIES WILL_FAIL TRUE)
  endforeach()
endif()
set_tests_properties(test_alert_rules_check test_alert_rules PROPERTIES LABELS unit TIMEOUT 60)
