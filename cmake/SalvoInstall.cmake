# `cmake --install`: the static libraries, the Swift modules, the C modules' maps and headers,
# and a package configuration, so that a CMake project can `find_package(Salvo)` and link
# Salvo::Salvo (the typed layer) or Salvo::SalvoCore (the engine). cmake/consumer builds one.
#
#   <prefix>/lib/salvo/lib*.a             Salvo, SalvoCore and what they link, in link order
#   <prefix>/lib/swift/salvo/*.swiftmodule  the modules an importer compiles against
#   <prefix>/include/salvo/<C module>/      module.modulemap and headers of CSalvo, CLLHTTP,
#                                          COpenSSL, CZlib, CNGHTTP2 (the engine imports them)
#   <prefix>/lib/cmake/Salvo/               SalvoConfig.cmake, SalvoConfigVersion.cmake
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(salvo_install_libraries ${CMAKE_INSTALL_LIBDIR}/salvo)
set(salvo_install_modules ${CMAKE_INSTALL_LIBDIR}/swift/salvo)
set(salvo_install_clang ${CMAKE_INSTALL_INCLUDEDIR}/salvo)
# Link order: each library before the ones it uses.
set(salvo_libraries Salvo Logging OrderedCollections SalvoCore SalvoTransport CSalvo HTTPTypes DequeModule
    ContainersPreview InternalCollectionsUtilities)

foreach(library IN LISTS salvo_libraries)
  install(FILES $<TARGET_FILE:${library}> DESTINATION ${salvo_install_libraries})
endforeach()
foreach(module IN LISTS salvo_libraries)
  if(NOT module STREQUAL "CSalvo")
    install(FILES ${CMAKE_Swift_MODULE_DIRECTORY}/${module}.swiftmodule ${CMAKE_Swift_MODULE_DIRECTORY}/${module}.swiftdoc
            DESTINATION ${salvo_install_modules})
  endif()
endforeach()

# The C modules, with maps that name their headers relative to themselves.
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/install-modulemaps/CSalvo/module.modulemap
     CONTENT "module CSalvo {\n    header \"CSalvo.h\"\n    export *\n}\n")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/install-modulemaps/CSalvo/module.modulemap
              ${CMAKE_CURRENT_SOURCE_DIR}/Sources/CSalvo/include/CSalvo.h
        DESTINATION ${salvo_install_clang}/CSalvo)
foreach(module CLLHTTP COpenSSL CZlib CNGHTTP2)
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/Sources/${module}/module.modulemap ${CMAKE_CURRENT_SOURCE_DIR}/Sources/${module}/shim.h
          DESTINATION ${salvo_install_clang}/${module})
endforeach()

configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/SalvoConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/SalvoConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Salvo
  PATH_VARS salvo_install_libraries salvo_install_modules salvo_install_clang)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/SalvoConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/SalvoConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/SalvoConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Salvo)
