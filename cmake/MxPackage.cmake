# Installation layout and the Debian package (cpack -G DEB).
#
# The layout is Debian's: msgxd in /usr/sbin (a daemon started by systemd,
# not a command for users; FHS and Debian put such programs in sbin),
# msgxctl, msgx-gen and msgx-diff in /usr/bin, the unit in /lib/systemd/system,
# sysusers and tmpfiles files in /usr/lib, the production sample as the
# conffile /etc/msgxd/msgxd.zpl. The unit names /usr/sbin/msgxd, so the
# package (prefix /usr) is the supported way to install.

set(MX_PACKAGE_NAME msgxd)
set(MX_DOC_DIR share/doc/${MX_PACKAGE_NAME})
set(MX_PACKAGE_DIR ${PROJECT_BINARY_DIR}/package)
set(MX_DEBIAN_DIR ${PROJECT_SOURCE_DIR}/deploy/debian)

# The changelog's newest entry must be this version: one version, everywhere.
file(STRINGS ${MX_DEBIAN_DIR}/changelog mx_changelog_head LIMIT_COUNT 1)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${MX_DEBIAN_DIR}/changelog)
if(NOT mx_changelog_head MATCHES "^${MX_PACKAGE_NAME} \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "deploy/debian/changelog starts with '${mx_changelog_head}': "
                      "its newest entry must be ${MX_PACKAGE_NAME} (${PROJECT_VERSION})")
endif()

# Debian wants manual pages and the changelog compressed (gzip -n: no
# timestamp, so the same sources give the same package).
find_program(MX_GZIP gzip REQUIRED)
set(MX_MAN_PAGES
  ${PROJECT_SOURCE_DIR}/docs/man/msgxd.8
  ${PROJECT_SOURCE_DIR}/docs/man/msgxctl.1
  ${PROJECT_SOURCE_DIR}/docs/man/msgx-gen.1
  ${PROJECT_SOURCE_DIR}/docs/man/msgx-diff.1
  ${PROJECT_BINARY_DIR}/docs/man/msgxd.conf.5)
set(MX_PACKAGE_FILES)
foreach(page ${MX_MAN_PAGES} ${MX_DEBIAN_DIR}/changelog)
  get_filename_component(name ${page} NAME)
  add_custom_command(OUTPUT ${MX_PACKAGE_DIR}/${name}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${MX_PACKAGE_DIR}
    COMMAND ${MX_GZIP} -9 -n -c ${page} > ${MX_PACKAGE_DIR}/${name}.gz
    DEPENDS ${page}
    COMMENT "Compressing ${name}")
  list(APPEND MX_PACKAGE_FILES ${MX_PACKAGE_DIR}/${name}.gz)
endforeach()
add_custom_target(package-files ALL DEPENDS ${MX_PACKAGE_FILES})
add_dependencies(package-files docs-man-config)

install(TARGETS msgxd DESTINATION sbin)
install(TARGETS msgxctl msgx-gen msgx-diff DESTINATION bin)
foreach(page ${MX_MAN_PAGES})
  get_filename_component(name ${page} NAME)
  string(REGEX REPLACE ".*\\." "" section ${name})
  install(FILES ${MX_PACKAGE_DIR}/${name}.gz DESTINATION share/man/man${section})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/msgxd.service DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/msgxd.sysusers
        DESTINATION lib/sysusers.d RENAME msgxd.conf)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/msgxd.tmpfiles
        DESTINATION lib/tmpfiles.d RENAME msgxd.conf)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/config/msgxd-prod.zpl
        DESTINATION /etc/msgxd RENAME msgxd.zpl)
install(FILES ${MX_DEBIAN_DIR}/copyright ${MX_PACKAGE_DIR}/changelog.gz
              ${PROJECT_SOURCE_DIR}/README.md
              ${PROJECT_SOURCE_DIR}/docs/operations.md
              ${PROJECT_SOURCE_DIR}/docs/configuration.md
              ${PROJECT_SOURCE_DIR}/docs/architecture.md
        DESTINATION ${MX_DOC_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/deploy/config/msgxd-dev.zpl
              ${PROJECT_SOURCE_DIR}/deploy/config/msgxd-prod.zpl
              ${PROJECT_SOURCE_DIR}/deploy/prometheus/alerts.yaml
              ${PROJECT_SOURCE_DIR}/deploy/grafana/msgxd-dashboard.json
        DESTINATION ${MX_DOC_DIR}/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${MX_PACKAGE_NAME})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "msgexchange maintainers <maintainers@msgexchange.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "airport message exchange daemon: AODB mailbox to PostgreSQL and Kafka")
# The extended description; CPack puts the summary above it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "msgxd reads SIS XML messages from an AODB's shared MySQL mailbox table
strictly in ID order, keeps the authoritative flight state in its own
PostgreSQL database and publishes every change to Kafka through a
transactional outbox. msgxctl is its admin command line; msgx-gen
generates SIS traffic for trials; msgx-diff compares msgxd's flight state
with a legacy store before a cutover.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Libraries from dpkg-shlibdeps; systemd for the unit, sysusers and
# tmpfiles; tzdata for the airport zone (msgx.operation-day.zone).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd, tzdata")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${MX_DEBIAN_DIR}/conffiles ${MX_DEBIAN_DIR}/postinst ${MX_DEBIAN_DIR}/prerm ${MX_DEBIAN_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_OUTPUT_FILE_PREFIX ${MX_PACKAGE_DIR})
include(CPack)
