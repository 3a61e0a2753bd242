# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# What every package of h5stack (packages/*) does alike, included by its CMakeLists.txt
# before project(): h5stack's version, H5STACK_VERSION, from its VERSION file (beside
# the package, where ./h5stack setup copies it with vfd-common, else at the top of the
# source tree); then, after project(), h5stack_package(MIN_HDF5).
find_file(H5STACK_VERSION_FILE VERSION PATHS ${CMAKE_CURRENT_SOURCE_DIR}/.. ${CMAKE_CURRENT_SOURCE_DIR}/../..
          NO_DEFAULT_PATH REQUIRED)
file(STRINGS ${H5STACK_VERSION_FILE} H5STACK_VERSION LIMIT_COUNT 1)
# a new release reconfigures a build tree (the version is in the libraries' names)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${H5STACK_VERSION_FILE})

# h5stack_package(MIN_HDF5): C11, GNU install directories, CTest, MPI and a parallel HDF5
# (MIN_HDF5 or newer; "" for any), the version in the programs and the drivers' error
# classes, and the warnings (long paths may shorten an error message, never overflow it:
# no truncation warnings). A macro: what it finds is the caller's.
macro(h5stack_package min_hdf5)
  add_compile_definitions(H5STACK_VERSION="${PROJECT_VERSION}")
  set(CMAKE_C_STANDARD 11)
  set(CMAKE_C_STANDARD_REQUIRED ON)
  include(GNUInstallDirs)
  include(CTest)
  find_package(MPI REQUIRED COMPONENTS C)
  find_package(HDF5 REQUIRED COMPONENTS C)
  # FindHDF5 says HDF5_IS_PARALLEL; HDF5's own package files say *_ENABLE_PARALLEL (1.14)
  # or *_PROVIDES_PARALLEL (2.x)
  if(NOT (HDF5_IS_PARALLEL OR HDF5_ENABLE_PARALLEL OR HDF5_PROVIDES_PARALLEL))
    message(FATAL_ERROR "${PROJECT_NAME} needs a parallel HDF5 (found ${HDF5_VERSION} without MPI)")
  endif()
  if(NOT "${min_hdf5}" STREQUAL "" AND HDF5_VERSION VERSION_LESS "${min_hdf5}")
    message(FATAL_ERROR "${PROJECT_NAME} needs HDF5 >= ${min_hdf5} (found ${HDF5_VERSION})")
  endif()
  add_compile_options(-Wall -Wextra -Wno-format-truncation)
endmacro()
