# install.cmake - what `cmake --install` puts in place, and the fusegen CMake package:
#
#   <prefix>/bin/fusegen                              the generator         fusegen::fusegen
#   <prefix>/lib/libfusegen_runtime.a                 the runtime           fusegen::runtime
#   <prefix>/lib/libfusegen_jit.a, libfusegen_gen.a   the runtime's JIT     fusegen::jit
#                                                     (with the generator's stages; needs cJSON)
#   <prefix>/include/fusegen/fusegen.h, fusegen_workspace.h, fusegen_registry.h, fusegen_launch.h, fusegen_jit.h
#   <prefix>/share/fusegen/templates/                 the generator's templates
#   <prefix>/lib/cmake/fusegen/                       fusegenConfig.cmake, fusegenConfigVersion.cmake,
#                                                     fusegenTargets.cmake, fusegen_generate.cmake
#
# A project then uses it with find_package(fusegen CONFIG REQUIRED) and fusegen_generate().
# The runtime (and so fusegen::runtime) exists only when a CUDA toolkit was found.
# Included from the top-level CMakeLists.txt after the targets are defined.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FUSEGEN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/fusegen" CACHE STRING
    "Where the fusegen CMake package goes, relative to the install prefix")
set(FUSEGEN_INSTALL_TEMPLATEDIR "${CMAKE_INSTALL_DATADIR}/fusegen/templates")
set(FUSEGEN_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/fusegen")

# ---- the generator ---------------------------------------------------------------------------
# Keeps the rpath to a cJSON outside the system folders.
set_target_properties(fusegen PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
if(NOT TARGET fusegen::fusegen)
  add_executable(fusegen::fusegen ALIAS fusegen)
endif()
install(TARGETS fusegen EXPORT fusegenTargets RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/templates/" DESTINATION "${FUSEGEN_INSTALL_TEMPLATEDIR}")

# ---- the runtime -----------------------------------------------------------------------------
if(TARGET fusegen_runtime)
  set(FUSEGEN_PACKAGE_HAS_RUNTIME ON)
  # The headers' folder is the source folder in the build tree and include/fusegen once
  # installed (generated code includes "fusegen.h", which includes the other three).
  set_target_properties(fusegen_runtime PROPERTIES
    EXPORT_NAME runtime
    INTERFACE_INCLUDE_DIRECTORIES
      "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/runtime>;$<INSTALL_INTERFACE:${FUSEGEN_INSTALL_INCLUDEDIR}>")
  if(NOT TARGET fusegen::runtime)
    add_library(fusegen::runtime ALIAS fusegen_runtime)
  endif()
  install(TARGETS fusegen_runtime EXPORT fusegenTargets
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
  install(FILES "${PROJECT_SOURCE_DIR}/runtime/fusegen.h" "${PROJECT_SOURCE_DIR}/runtime/fusegen_workspace.h"
    "${PROJECT_SOURCE_DIR}/runtime/fusegen_registry.h" "${PROJECT_SOURCE_DIR}/runtime/fusegen_launch.h"
    DESTINATION "${FUSEGEN_INSTALL_INCLUDEDIR}")
else()
  set(FUSEGEN_PACKAGE_HAS_RUNTIME OFF)
endif()

# ---- the JIT ---------------------------------------------------------------------------------
if(TARGET fusegen_jit)
  set(FUSEGEN_PACKAGE_HAS_JIT ON)
  set_target_properties(fusegen_jit PROPERTIES EXPORT_NAME jit)
  set_target_properties(fusegen_gen PROPERTIES EXPORT_NAME generator_stages)
  if(NOT TARGET fusegen::jit)
    add_library(fusegen::jit ALIAS fusegen_jit)
  endif()
  install(TARGETS fusegen_jit fusegen_gen EXPORT fusegenTargets ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
  install(FILES "${PROJECT_SOURCE_DIR}/runtime/fusegen_jit.h" DESTINATION "${FUSEGEN_INSTALL_INCLUDEDIR}")
else()
  set(FUSEGEN_PACKAGE_HAS_JIT OFF)
endif()

# ---- the package -----------------------------------------------------------------------------
install(EXPORT fusegenTargets NAMESPACE fusegen:: DESTINATION "${FUSEGEN_INSTALL_CMAKEDIR}")
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/fusegenConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/fusegenConfig.cmake"
  INSTALL_DESTINATION "${FUSEGEN_INSTALL_CMAKEDIR}"
  PATH_VARS FUSEGEN_INSTALL_TEMPLATEDIR)
# 0.x: a minor version may break compatibility.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/fusegenConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/fusegenConfig.cmake"
  "${PROJECT_BINARY_DIR}/fusegenConfigVersion.cmake"
  "${CMAKE_CURRENT_LIST_DIR}/fusegen_generate.cmake"
  DESTINATION "${FUSEGEN_INSTALL_CMAKEDIR}")
