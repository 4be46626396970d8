# fusegen_add_library(SPEC <spec.json> OUTPUT_DIR <dir> TARGET_PREFIX <name> [ARCHS <cuda archs>])
#
# Runs the generator at build time (when the spec, the generator or a template changes: the
# generator writes a depfile naming the templates it read) and builds the generated sources into
#   <name>        static kernel library
#   <name>_shared shared kernel library
# both carrying the generated header's folder and the runtime as usage requirements.
# The list of generated files is known at configure time: it follows from the spec's library
# name and kernel names, which are read here with string(JSON).

set(FUSEGEN_CUDA_ARCHITECTURES "80;90a-real" CACHE STRING
    "CUDA architectures the kernel libraries are compiled for")

function(fusegen_add_library)
  cmake_parse_arguments(FG "" "SPEC;OUTPUT_DIR;TARGET_PREFIX" "ARCHS" ${ARGN})
  if(NOT FG_ARCHS)
    set(FG_ARCHS ${FUSEGEN_CUDA_ARCHITECTURES})
  endif()
  file(READ "${FG_SPEC}" spec_text)
  string(JSON lib ERROR_VARIABLE json_err GET "${spec_text}" library)
  if(json_err)
    message(FATAL_ERROR "${FG_SPEC}: cannot read the library name: ${json_err} (run 'fusegen check ${FG_SPEC}')")
  endif()
  string(JSON n_kernels LENGTH "${spec_text}" kernels)
  set(out "${FG_OUTPUT_DIR}/${lib}")
  set(cu_files "")
  math(EXPR last "${n_kernels} - 1")
  foreach(i RANGE ${last})
    string(JSON kname GET "${spec_text}" kernels ${i} name)
    list(APPEND cu_files "${out}/${lib}_${kname}.cu")
  endforeach()
  set(outputs "${out}/${lib}.h" "${out}/${lib}_dispatch.c" "${out}/fusegen_sm80.cuh" ${cu_files})

  # Paths in banners are as given to the generator: relative to the source tree when inside it,
  # so that the same spec gives the same bytes in every build folder.
  file(RELATIVE_PATH spec_rel "${CMAKE_SOURCE_DIR}" "${FG_SPEC}")
  if(spec_rel MATCHES "^\\.\\.")
    set(spec_rel "${FG_SPEC}")
  endif()
  file(GLOB_RECURSE template_files CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/templates/*")
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND fusegen generate "${spec_rel}" -o "${FG_OUTPUT_DIR}" --depfile "${FG_OUTPUT_DIR}/${lib}.d"
            --templates "${PROJECT_SOURCE_DIR}/templates"
    DEPENDS fusegen "${FG_SPEC}" ${template_files}
    DEPFILE "${FG_OUTPUT_DIR}/${lib}.d"
    WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}"
    COMMENT "fusegen: generating ${lib} from ${spec_rel}"
    VERBATIM)

  set(t ${FG_TARGET_PREFIX})
  add_library(${t}_objects OBJECT ${cu_files} "${out}/${lib}_dispatch.c")
  target_include_directories(${t}_objects PUBLIC "${out}")
  target_link_libraries(${t}_objects PUBLIC fusegen_runtime)
  set_target_properties(${t}_objects PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CUDA_ARCHITECTURES "${FG_ARCHS}"
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON)
  target_compile_options(${t}_objects PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-warn-spills --Werror=all-warnings -Xcompiler=-Wall>
    $<$<COMPILE_LANGUAGE:C>:${FUSEGEN_C_WARNINGS}>)

  add_library(${t} STATIC $<TARGET_OBJECTS:${t}_objects>)
  add_library(${t}_shared SHARED $<TARGET_OBJECTS:${t}_objects>)
  foreach(lt ${t} ${t}_shared)
    target_include_directories(${lt} PUBLIC "${out}")
    target_link_libraries(${lt} PUBLIC fusegen_runtime CUDA::cudart)
    set_target_properties(${lt} PROPERTIES OUTPUT_NAME ${lib} LINKER_LANGUAGE CUDA)
  endforeach()
endfunction()
