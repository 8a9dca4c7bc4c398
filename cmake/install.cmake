# What `cmake --install` puts where (GNU dirs under CMAKE_INSTALL_PREFIX):
#   bin/mpisim                               the command
#   <libdir>/libmpisim.so                    the preloaded shim (pkg-config mpisim, CMake mpisim::shim)
#   <libdir>/libnetmodel.a, include/mpisim/  the network library (and libmpisim_common.a, the generic
#                                            parts below it) and its header, for network-only
#                                            studies in other programs (pkg-config mpisim-netmodel,
#                                            CMake find_package(mpisim))
#   libexec/mpisim/                          the study programs (matmul, pingpong, ...)
#   share/mpisim/configs, share/mpisim/results   profiles; the results scripts
#   share/man/man1/mpisim.1, share/bash-completion/completions/mpisim
install(TARGETS mpisim_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET mpisim)
  install(TARGETS mpisim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(TARGETS netmodel mpisim_common EXPORT mpisimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mpisim)
install(FILES ${CMAKE_SOURCE_DIR}/netmodel/include/netmodel.h ${CMAKE_SOURCE_DIR}/common/include/cm_registry.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mpisim)
if(DEFINED MPISIM_APPS)
  install(TARGETS ${MPISIM_APPS} RUNTIME DESTINATION ${MPISIM_APPDIR})
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs/ DESTINATION ${MPISIM_DATADIR}/configs
        FILES_MATCHING PATTERN "*.ini")
install(FILES ${CMAKE_SOURCE_DIR}/results/plot_speedup.py DESTINATION ${MPISIM_DATADIR}/results)
# reading traces from Python (replay/README.md)
install(FILES ${CMAKE_SOURCE_DIR}/replay/mpisim_trace.py DESTINATION ${MPISIM_DATADIR}/python)
install(FILES ${CMAKE_SOURCE_DIR}/cli/mpisim.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/cli/mpisim.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME mpisim)

# pkg-config: the network library (static; inih and libm are its dependencies, in its Libs) and
# the shim (shared), with variables naming the shim to preload, the command and the profiles
file(RELATIVE_PATH MPISIM_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" MPISIM_PC_TO_PREFIX "${MPISIM_PC_TO_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/mpisim-netmodel.pc.in ${CMAKE_BINARY_DIR}/mpisim-netmodel.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/mpisim-netmodel.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET mpisim)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/mpisim.pc.in ${CMAKE_BINARY_DIR}/mpisim.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/mpisim.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# CMake package: find_package(mpisim) gives mpisim::netmodel, mpisim::shim, MPISIM_SHIM (the shim's
# path) and MPISIM_COMMAND
include(CMakePackageConfigHelpers)
install(EXPORT mpisimTargets NAMESPACE mpisim:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mpisim)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/mpisimConfig.cmake.in
  ${CMAKE_BINARY_DIR}/mpisimConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mpisim
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/mpisimConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/mpisimConfig.cmake ${CMAKE_BINARY_DIR}/mpisimConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mpisim)
