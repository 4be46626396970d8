# run_consumer.cmake - the consumer_build test (cmake -P). Inputs: FUSEGEN_BUILD_DIR,
# FUSEGEN_CONFIG, PROJECT_DIR, WORK, GENERATOR, C_COMPILER, CUDA_COMPILER, CUDA_ROOT, ARCHS.
#   1. cmake --install the fusegen build into WORK/prefix
#   2. configure a copy of PROJECT_DIR in WORK/build with CMAKE_PREFIX_PATH=WORK/prefix
#   3. build it: the generator runs, the kernel compiles, app links
#   4. build again: nothing to do (the generator does not run)
#   5. touch the spec: the generator runs, writes the same bytes, nothing recompiles
#   6. touch a template: the generator runs again, nothing recompiles
#   7. add a kernel to the spec: the new kernel is generated, compiled and linked

function(step name)
  message(STATUS "consumer: ${name}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(step_output "${out}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${name} failed (${rc}):\n${out}")
  endif()
endfunction()

function(expect what regex)
  if(NOT step_output MATCHES "${regex}")
    message(FATAL_ERROR "consumer: ${what}: expected /${regex}/ in:\n${step_output}")
  endif()
endfunction()

function(expect_not what regex)
  if(step_output MATCHES "${regex}")
    message(FATAL_ERROR "consumer: ${what}: did not expect /${regex}/ in:\n${step_output}")
  endif()
endfunction()

set(prefix "${WORK}/prefix")
set(src "${WORK}/src")
set(build "${WORK}/build")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${PROJECT_DIR}/" DESTINATION "${src}")

set(config_args "")
if(FUSEGEN_CONFIG)
  set(config_args --config "${FUSEGEN_CONFIG}")
endif()
step("install into ${prefix}" "${CMAKE_COMMAND}" --install "${FUSEGEN_BUILD_DIR}" --prefix "${prefix}" ${config_args})
foreach(f bin/fusegen include/fusegen/fusegen.h include/fusegen/fusegen_workspace.h include/fusegen/fusegen_registry.h include/fusegen/fusegen_jit.h
          share/fusegen/templates/host/library.h.tmpl)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "consumer: the install has no ${f}")
  endif()
endforeach()

step("configure" "${CMAKE_COMMAND}" -S "${src}" -B "${build}" -G "${GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
     "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}" "-DCUDAToolkit_ROOT=${CUDA_ROOT}"
     "-DCONSUMER_ARCHS=${ARCHS}" -DCMAKE_BUILD_TYPE=Release
     # the same C flags as the build under test (sanitizer builds link their runtime)
     "-DCMAKE_C_FLAGS=${C_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")

set(kernel_re "Building CUDA object[^\n]*consumer_demo_linear_bias_relu\\.cu")
step("build" "${CMAKE_COMMAND}" --build "${build}" ${config_args})
expect("build" "fusegen: generating consumer_demo")
expect("build" "${kernel_re}")
if(NOT EXISTS "${build}/app" AND NOT EXISTS "${build}/app.exe" AND NOT FUSEGEN_CONFIG)
  message(FATAL_ERROR "consumer: the build made no app")
endif()

step("build again" "${CMAKE_COMMAND}" --build "${build}" ${config_args})
expect_not("build again" "fusegen: generating|Building")

# A newer spec with the same bytes: the generator runs, its output is unchanged, and no kernel
# is recompiled.
file(TOUCH "${src}/my.json")
step("build after touching the spec" "${CMAKE_COMMAND}" --build "${build}" ${config_args})
expect("build after touching the spec" "fusegen: generating consumer_demo")
expect_not("build after touching the spec" "Building CUDA")
step("build again after touching the spec" "${CMAKE_COMMAND}" --build "${build}" ${config_args})
expect_not("build again after touching the spec" "fusegen: generating|Building")

# A template newer than the outputs (the installed one): the generator runs again.
file(TOUCH "${prefix}/share/fusegen/templates/host/dispatch.c.tmpl")
step("build after touching a template" "${CMAKE_COMMAND}" --build "${build}" ${config_args})
expect("build after touching a template" "fusegen: generating consumer_demo")
expect_not("build after touching a template" "Building CUDA")

# A kernel added to the spec: CMake configures again, and the new kernel is generated, compiled
# and linked (every file's banner carries the spec's hash, so the others are rebuilt too).
file(READ "${src}/my.json" spec)
string(JSON kernel GET "${spec}" kernels 0)
string(JSON kernel SET "${kernel}" name "\"linear_scale_gelu\"")
string(JSON kernel SET "${kernel}" epilogue "[{\"op\": \"scale\", \"alpha\": 0.5}, {\"op\": \"gelu\"}]")
string(JSON spec SET "${spec}" kernels 1 "${kernel}")
file(WRITE "${src}/my.json" "${spec}")
step("build after adding a kernel" "${CMAKE_COMMAND}" --build "${build}" ${config_args})
expect("build after adding a kernel" "fusegen: generating consumer_demo[^\n]*2 kernels")
expect("build after adding a kernel" "Building CUDA object[^\n]*consumer_demo_linear_scale_gelu\\.cu")

message(STATUS "consumer: ok")
