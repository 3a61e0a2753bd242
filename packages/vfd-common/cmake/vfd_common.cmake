# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# What both driver packages (hdf5-vfd-multifile, hdf5-vfd-dsm) build and install alike:
# the vfd-common sources of a driver library, and the installation of a driver for HDF5
# and for other projects. Included by each driver's CMakeLists.txt after project().
include(CMakePackageConfigHelpers)

get_filename_component(VFD_COMMON ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
# the C every driver library compiles in (packages/vfd-common/README.md)
set(VFD_COMMON_DRIVER_SOURCES ${VFD_COMMON}/vfd_datatype.c ${VFD_COMMON}/vfd_driver.c ${VFD_COMMON}/vfd_fapl.c
    ${VFD_COMMON}/vfd_mpi.c ${VFD_COMMON}/vfd_mpihandle.c ${VFD_COMMON}/vfd_selection.c ${VFD_COMMON}/vfd_watch.c)

# vfd_install_driver(TARGET HEADER DESCRIPTION): the driver library with its public
# header; the link in lib/plugin/ that HDF5_PLUGIN_PATH finds; and for other projects a
# CMake package (find_package(TARGET CONFIG), the target h5stack::TARGET) and a
# pkg-config file (pkg-config --cflags --libs TARGET)
function(vfd_install_driver target header description)
  install(TARGETS ${target} EXPORT ${target}Targets)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(CODE "file(MAKE_DIRECTORY \$ENV{DESTDIR}${CMAKE_INSTALL_FULL_LIBDIR}/plugin)
    file(CREATE_LINK ../lib${target}.so \$ENV{DESTDIR}${CMAKE_INSTALL_FULL_LIBDIR}/plugin/lib${target}.so SYMBOLIC)")
  set(cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/${target})
  set(built ${CMAKE_CURRENT_BINARY_DIR}/package)
  install(EXPORT ${target}Targets NAMESPACE h5stack:: DESTINATION ${cmakedir})
  set(VFD_TARGET ${target})
  list(GET HDF5_INCLUDE_DIRS 0 hdf5_include) # the HDF5 it was built with: its prefix
  get_filename_component(VFD_HDF5_ROOT ${hdf5_include} DIRECTORY)
  configure_package_config_file(${VFD_COMMON}/cmake/vfd-config.cmake.in ${built}/${target}Config.cmake
                                INSTALL_DESTINATION ${cmakedir})
  write_basic_package_version_file(${built}/${target}ConfigVersion.cmake COMPATIBILITY SameMinorVersion)
  install(FILES ${built}/${target}Config.cmake ${built}/${target}ConfigVersion.cmake DESTINATION ${cmakedir})
  set(VFD_DESCRIPTION ${description})
  file(RELATIVE_PATH VFD_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
  string(REGEX REPLACE "/$" "" VFD_PC_TO_PREFIX "${VFD_PC_TO_PREFIX}")
  configure_file(${VFD_COMMON}/cmake/vfd.pc.in ${built}/${target}.pc @ONLY)
  install(FILES ${built}/${target}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
