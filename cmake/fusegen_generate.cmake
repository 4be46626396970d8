# fusegen_generate.cmake - CMake functions that run the fusegen generator at build time and
# compile what it emits. One file serves both ways in:
#   - the fusegen source tree includes it (generator target `fusegen`, runtime `fusegen_runtime`,
#     templates in <source>/templates);
#   - the installed package (fusegenConfig.cmake) includes it after setting
#     FUSEGEN_GENERATOR_TARGET=fusegen::fusegen, FUSEGEN_RUNTIME_TARGET=fusegen::runtime and
#     FUSEGEN_TEMPLATE_DIR=<prefix>/share/fusegen/templates.
#
#   fusegen_generate(<target> SPECS <spec.json>... [ARCHS <cuda archs>...] [KERNELS <globs>...]
#                    [TUNING <tuning.json>...] [OUTPUT_DIR <dir>])
#     One call per target. KERNELS: build only the spec kernels whose names match one of the
#     globs (* and ? only); the whole spec is still checked. TUNING: tuning files (written by
#     fusegen-tune, one per device) whose measured winners are compiled into the dispatch table
#     of the library each names (`fusegen generate --tuning`; read when CMake configures to find
#     that library, and dependencies of its generation).
#       Generates the kernel library of each spec at build time and compiles it into <target>
#       (through an object library <target>_fusegen that carries the generated headers' folders,
#       the runtime and CUDA::cudart as usage requirements).
#
#   fusegen_add_library(SPEC <spec.json> OUTPUT_DIR <dir> TARGET_PREFIX <name> [ARCHS <cuda archs>...]
#                       [TUNING <tuning.json>...])
#       Generates one spec and builds <name> (static) and <name>_shared from one object library
#       <name>_objects, all named after the spec's library.
#
# For a spec whose library is L, the generator writes DIR/L/L.h, DIR/L/L_dispatch.c,
# DIR/L/fusegen_sm80.cuh, DIR/L/fusegen_sm90.cuh and DIR/L/L_<kernel>.cu for each spec kernel. That list is read from
# the spec with string(JSON) when CMake configures (and CMake configures again when the spec
# changes, so a kernel added to the spec is compiled too).
#
# The generator runs exactly when its inputs changed: the spec, the generator executable, or a
# template (the generator writes a depfile naming the templates it read; every template file is
# also a plain dependency). It rewrites only the files whose bytes changed, and the build
# recompiles only those: the custom command's output is a stamp file, the sources are its
# byproducts. (Every banner carries the spec's hash: a spec edit rewrites every file.)
#
# When this file runs as a script (cmake -P), it is the build-time helper of the custom command:
# it turns the generator's depfile into one for the stamp and touches the stamp.

# ---- script mode: finish one generation step -----------------------------------------------
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED FUSEGEN_STAMP)
  # In: FUSEGEN_DEPFILE_IN (the generator's), FUSEGEN_DEPFILE_OUT, FUSEGEN_STAMP and
  # FUSEGEN_WORKDIR (the generator's working folder, which relative paths are relative to).
  # The generator's depfile is "out1 \\\n out2 ...: \\\n dep1 \\\n dep2\n" with make escapes.
  # The stamp becomes the only target and every relative dependency is made absolute, so that
  # make and ninja read the same files whatever folder they resolve relative paths against.
  file(READ "${FUSEGEN_DEPFILE_IN}" text)
  string(FIND "${text}" ": \\\n" colon)
  if(colon LESS 0)
    message(FATAL_ERROR "fusegen: ${FUSEGEN_DEPFILE_IN}: not a depfile written by fusegen")
  endif()
  math(EXPR deps_at "${colon} + 4")
  string(SUBSTRING "${text}" ${deps_at} -1 deps)
  string(REPLACE " \\\n" "\n" deps "${deps}")
  string(REPLACE ";" "\\;" deps "${deps}")
  string(REPLACE "\n" ";" deps "${deps}")
  string(REPLACE " " "\\ " stamp "${FUSEGEN_STAMP}")
  set(out "${stamp}:")
  foreach(dep IN LISTS deps)
    string(STRIP "${dep}" dep)
    if(dep STREQUAL "")
      continue()
    endif()
    if(NOT IS_ABSOLUTE "${dep}")
      string(REPLACE " " "\\ " workdir "${FUSEGEN_WORKDIR}")
      set(dep "${workdir}/${dep}")
    endif()
    string(APPEND out " \\\n ${dep}")
  endforeach()
  file(WRITE "${FUSEGEN_DEPFILE_OUT}" "${out}\n")
  file(TOUCH "${FUSEGEN_STAMP}")
  return()
endif()

# ---- configuration ---------------------------------------------------------------------------
if(NOT DEFINED FUSEGEN_GENERATOR_TARGET)
  set(FUSEGEN_GENERATOR_TARGET fusegen)
endif()
if(NOT DEFINED FUSEGEN_RUNTIME_TARGET)
  set(FUSEGEN_RUNTIME_TARGET fusegen_runtime)
endif()
if(NOT DEFINED FUSEGEN_TEMPLATE_DIR)
  get_filename_component(FUSEGEN_TEMPLATE_DIR "${CMAKE_CURRENT_LIST_DIR}/../templates" ABSOLUTE)
endif()
set(_FUSEGEN_SCRIPT "${CMAKE_CURRENT_LIST_FILE}")

set(FUSEGEN_CUDA_ARCHITECTURES "80;90a-real" CACHE STRING
    "CUDA architectures fusegen kernel libraries are compiled for when no ARCHS are given")

# ---- internals -------------------------------------------------------------------------------

# _fusegen_spec_files(<spec> <out_dir> <prefix>)
# Reads the spec's library and kernel names and sets, in the caller:
#   <prefix>_LIBRARY  the library name       <prefix>_DIR      <out_dir>/<library>
#   <prefix>_KERNELS  the spec kernel names  <prefix>_CU       the kernel .cu files
#   <prefix>_SOURCES  .cu files + dispatch.c <prefix>_HEADERS  <library>.h and the family headers
#   <prefix>_HOPPER   ON when a kept kernel lists sm_90a
# KERNELS globs (ARGN, optional) keep only the spec kernels whose names match one of them, as
# the generator's --only does: `*` any run of characters, `?` one character.
function(_fusegen_spec_files spec out_dir prefix)
  set(globs ${ARGN})
  set(regexes "")
  foreach(g ${globs})
    if(g MATCHES "[][\\]")
      message(FATAL_ERROR "fusegen: KERNELS glob '${g}' has [, ] or \\: globs take * and ? only")
    endif()
    string(REGEX REPLACE "([][.+^$(){}|\\])" "\\\\\\1" re "${g}")
    string(REPLACE "*" ".*" re "${re}")
    string(REPLACE "?" "." re "${re}")
    list(APPEND regexes "^${re}$")
  endforeach()
  if(NOT EXISTS "${spec}")
    message(FATAL_ERROR "fusegen: spec '${spec}' does not exist")
  endif()
  file(READ "${spec}" text)
  string(JSON lib ERROR_VARIABLE err GET "${text}" library)
  if(err)
    message(FATAL_ERROR "fusegen: ${spec}: cannot read the library name: ${err} (run 'fusegen check ${spec}')")
  endif()
  if(NOT lib MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "fusegen: ${spec}: library name '${lib}' is not a C identifier (run 'fusegen check ${spec}')")
  endif()
  string(JSON n ERROR_VARIABLE err LENGTH "${text}" kernels)
  if(err OR n EQUAL 0)
    message(FATAL_ERROR "fusegen: ${spec}: no kernels (run 'fusegen check ${spec}')")
  endif()
  set(dir "${out_dir}/${lib}")
  set(kernels "")
  set(cu "")
  set(hopper "")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON k ERROR_VARIABLE err GET "${text}" kernels ${i} name)
    if(err OR NOT k MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      message(FATAL_ERROR "fusegen: ${spec}: /kernels/${i}/name is missing or not an identifier (run 'fusegen check ${spec}')")
    endif()
    set(keep ON)
    if(regexes)
      set(keep OFF)
      foreach(re ${regexes})
        if(k MATCHES "${re}")
          set(keep ON)
        endif()
      endforeach()
    endif()
    if(keep)
      list(APPEND kernels "${k}")
      list(APPEND cu "${dir}/${lib}_${k}.cu")
      string(JSON arch ERROR_VARIABLE err GET "${text}" kernels ${i} arch)
      if(NOT err AND arch MATCHES "\"sm_90a\"")
        list(APPEND hopper "${k}")
      endif()
    endif()
  endforeach()
  if(NOT kernels)
    message(FATAL_ERROR "fusegen: ${spec}: no kernel name matches KERNELS ${globs}")
  endif()
  set(${prefix}_LIBRARY "${lib}" PARENT_SCOPE)
  set(${prefix}_DIR "${dir}" PARENT_SCOPE)
  set(${prefix}_KERNELS "${kernels}" PARENT_SCOPE)
  set(${prefix}_HOPPER "${hopper}" PARENT_SCOPE)   # the kept kernels that list sm_90a
  set(${prefix}_CU "${cu}" PARENT_SCOPE)
  set(${prefix}_SOURCES ${cu} "${dir}/${lib}_dispatch.c" PARENT_SCOPE)
  set(${prefix}_HEADERS "${dir}/${lib}.h" "${dir}/fusegen_sm80.cuh" "${dir}/fusegen_sm90.cuh" PARENT_SCOPE)
endfunction()

# _fusegen_add_objects(<name> SPECS <spec>... OUTPUT_DIR <dir> ARCHS <archs>... [COMPILE_OPTIONS <opt>...]
#                      [TUNING <file>...])
# The generation commands for every spec, and the object library <name> that compiles their
# output. Sets <name>_LIBRARIES (the spec library names) in the caller.
function(_fusegen_add_objects name)
  cmake_parse_arguments(PARSE_ARGV 1 FG "" "OUTPUT_DIR" "SPECS;ARCHS;COMPILE_OPTIONS;KERNELS;TUNING")
  # a relative folder is the build's, as the generation rule and the object library both see it
  get_filename_component(FG_OUTPUT_DIR "${FG_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  # each tuning file goes to the generation of the library it names ("library": {"name": ...});
  # the generator checks the rest (spec hash, winners) when it runs
  set(tuning_files "")
  set(tuning_libs "")
  foreach(tf IN LISTS FG_TUNING)
    get_filename_component(tf "${tf}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${tf}")
      message(FATAL_ERROR "fusegen: tuning file '${tf}' does not exist")
    endif()
    file(READ "${tf}" tf_text)
    string(JSON tf_lib ERROR_VARIABLE tf_err GET "${tf_text}" library name)
    if(tf_err)
      message(FATAL_ERROR "fusegen: tuning file '${tf}' names no library (\"library\": {\"name\": ...}): ${tf_err}")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${tf}")
    list(APPEND tuning_files "${tf}")
    list(APPEND tuning_libs "${tf_lib}")
  endforeach()
  set(only_args "")
  foreach(g ${FG_KERNELS})
    list(APPEND only_args --only "${g}")
  endforeach()
  set(gen "${FUSEGEN_GENERATOR_TARGET}")
  set(runtime "${FUSEGEN_RUNTIME_TARGET}")
  if(NOT TARGET "${gen}")
    message(FATAL_ERROR "fusegen: the generator target '${gen}' does not exist")
  endif()
  if(NOT TARGET "${runtime}")
    message(FATAL_ERROR "fusegen: the runtime target '${runtime}' does not exist (it needs a CUDA toolkit)")
  endif()
  if(NOT TARGET CUDA::cudart)
    find_package(CUDAToolkit REQUIRED)
  endif()
  # Hopper kernels (listed as sm_90a) exist only in code built for 90a; without it the runtime
  # could select a kernel that has no machine code for the device.
  set(has_90a OFF)
  foreach(a ${FG_ARCHS})
    if(a MATCHES "^90a")
      set(has_90a ON)
    endif()
  endforeach()
  if(NOT EXISTS "${FUSEGEN_TEMPLATE_DIR}/host")
    message(FATAL_ERROR "fusegen: no templates in '${FUSEGEN_TEMPLATE_DIR}' (set FUSEGEN_TEMPLATE_DIR)")
  endif()
  file(GLOB_RECURSE templates CONFIGURE_DEPENDS "${FUSEGEN_TEMPLATE_DIR}/*")

  set(sources "")
  set(dirs "")
  set(libs "")
  set(kernel_names "")
  foreach(spec IN LISTS FG_SPECS)
    get_filename_component(spec "${spec}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    _fusegen_spec_files("${spec}" "${FG_OUTPUT_DIR}" s ${FG_KERNELS})
    if(s_HOPPER AND NOT has_90a)
      list(JOIN s_HOPPER ", " hopper_list)
      message(FATAL_ERROR "fusegen: ${spec} lists sm_90a for ${hopper_list} but the CUDA architectures (${FG_ARCHS}) do not include 90a: add 90a (e.g. ARCHS 80 90a-real), or take sm_90a out of those kernels' arch lists")
    endif()
    if(s_LIBRARY IN_LIST libs)
      message(FATAL_ERROR "fusegen: library '${s_LIBRARY}' is defined by two specs (${spec})")
    endif()
    # One folder of output has one generation rule: a second call that writes the same library
    # there from another folder, or with other KERNELS (each run removes the files the other
    # wrote), would make two. The same call again in the same folder shares the rule.
    set(stamp "${FG_OUTPUT_DIR}/${s_LIBRARY}.stamp")
    set(rule "${CMAKE_CURRENT_SOURCE_DIR} (KERNELS: ${FG_KERNELS})")
    if(FG_TUNING)
      set(rule "${CMAKE_CURRENT_SOURCE_DIR} (KERNELS: ${FG_KERNELS}; TUNING: ${FG_TUNING})")
    endif()
    get_property(owner GLOBAL PROPERTY "_FUSEGEN_OWNER_${stamp}")
    if(owner AND NOT owner STREQUAL rule)
      message(FATAL_ERROR "fusegen: library '${s_LIBRARY}' is already generated into ${FG_OUTPUT_DIR} from ${owner}: give this call its own OUTPUT_DIR")
    endif()
    set_property(GLOBAL PROPERTY "_FUSEGEN_OWNER_${stamp}" "${rule}")
    list(APPEND libs "${s_LIBRARY}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${spec}")

    # Banners name the spec as given to the generator: relative to the top source folder when
    # it is inside it, so the same spec gives the same bytes in every build folder.
    file(RELATIVE_PATH spec_arg "${CMAKE_SOURCE_DIR}" "${spec}")
    if(spec_arg MATCHES "^\\.\\./" OR IS_ABSOLUTE "${spec_arg}")
      set(spec_arg "${spec}")
    endif()
    set(lib "${s_LIBRARY}")
    set(tuning_args "")
    set(tuning_deps "")
    list(LENGTH tuning_files n_tf)
    if(n_tf GREATER 0)
      math(EXPR last_tf "${n_tf} - 1")
      foreach(i RANGE ${last_tf})
        list(GET tuning_libs ${i} tf_lib)
        if(tf_lib STREQUAL lib)
          list(GET tuning_files ${i} tf)
          list(APPEND tuning_args --tuning "${tf}")
          list(APPEND tuning_deps "${tf}")
        endif()
      endforeach()
    endif()
    list(LENGTH s_KERNELS n_k)
    list(JOIN s_KERNELS ", " k_list)
    set(k_word kernels)
    if(n_k EQUAL 1)
      set(k_word kernel)
    endif()
    add_custom_command(
      OUTPUT "${stamp}"
      BYPRODUCTS ${s_SOURCES} ${s_HEADERS}
      COMMAND "${gen}" generate "${spec_arg}" -o "${FG_OUTPUT_DIR}"
              --depfile "${FG_OUTPUT_DIR}/${lib}.gen.d" --templates "${FUSEGEN_TEMPLATE_DIR}" ${only_args}
              ${tuning_args}
      COMMAND "${CMAKE_COMMAND}" "-DFUSEGEN_DEPFILE_IN=${FG_OUTPUT_DIR}/${lib}.gen.d"
              "-DFUSEGEN_DEPFILE_OUT=${FG_OUTPUT_DIR}/${lib}.d" "-DFUSEGEN_STAMP=${stamp}"
              "-DFUSEGEN_WORKDIR=${CMAKE_SOURCE_DIR}" -P "${_FUSEGEN_SCRIPT}"
      DEPENDS "${gen}" "$<TARGET_FILE:${gen}>" "${spec}" ${templates} "${_FUSEGEN_SCRIPT}" ${tuning_deps}
      DEPFILE "${FG_OUTPUT_DIR}/${lib}.d"
      WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}"
      COMMENT "fusegen: generating ${lib} from ${spec_arg} (${n_k} ${k_word}: ${k_list})"
      VERBATIM)
    list(APPEND sources "${stamp}" ${s_SOURCES} ${s_HEADERS})
    list(APPEND dirs "${s_DIR}")
    list(APPEND kernel_names ${s_KERNELS})
  endforeach()
  foreach(tf_lib IN LISTS tuning_libs)
    if(NOT tf_lib IN_LIST libs)
      list(FIND tuning_libs "${tf_lib}" i)
      list(GET tuning_files ${i} tf)
      message(FATAL_ERROR "fusegen: tuning file '${tf}' is for library '${tf_lib}', which none of the specs (${FG_SPECS}) defines")
    endif()
  endforeach()

  add_library(${name} OBJECT ${sources})
  target_include_directories(${name} PUBLIC ${dirs})
  target_link_libraries(${name} PUBLIC ${runtime} CUDA::cudart)
  set_target_properties(${name} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CUDA_ARCHITECTURES "${FG_ARCHS}"
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    CUDA_RUNTIME_LIBRARY Shared)
  if(FG_COMPILE_OPTIONS)
    target_compile_options(${name} PRIVATE ${FG_COMPILE_OPTIONS})
  endif()
  set(${name}_LIBRARIES "${libs}" PARENT_SCOPE)
endfunction()

# ---- the in-tree kernel libraries ------------------------------------------------------------
function(_fusegen_add_library)
  if(CMAKE_VERSION VERSION_LESS 3.24)
    message(FATAL_ERROR "fusegen_add_library needs CMake 3.24 or later (its shared library links the runtime whole with $<LINK_LIBRARY:WHOLE_ARCHIVE>); this is ${CMAKE_VERSION}: use fusegen_generate()")
  endif()
  cmake_parse_arguments(PARSE_ARGV 0 FG "" "SPEC;OUTPUT_DIR;TARGET_PREFIX" "ARCHS;TUNING")
  if(FG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fusegen_add_library: unknown arguments: ${FG_UNPARSED_ARGUMENTS} (it takes SPEC, OUTPUT_DIR, TARGET_PREFIX, ARCHS and TUNING)")
  endif()
  if(NOT FG_SPEC OR NOT FG_OUTPUT_DIR OR NOT FG_TARGET_PREFIX)
    message(FATAL_ERROR "fusegen_add_library: SPEC, OUTPUT_DIR and TARGET_PREFIX are required")
  endif()
  if(NOT FG_ARCHS)
    set(FG_ARCHS ${FUSEGEN_CUDA_ARCHITECTURES})
  endif()
  set(t ${FG_TARGET_PREFIX})
  get_filename_component(FG_SPEC "${FG_SPEC}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(FG_OUTPUT_DIR "${FG_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  _fusegen_spec_files("${FG_SPEC}" "${FG_OUTPUT_DIR}" s)
  # the libraries are named after the spec's library: two of one name in one folder would clash
  get_property(other GLOBAL PROPERTY "_FUSEGEN_ADD_LIBRARY_${CMAKE_CURRENT_BINARY_DIR}/${s_LIBRARY}")
  if(other)
    message(FATAL_ERROR "fusegen_add_library(${t}): library '${s_LIBRARY}' is already built in this folder by ${other}: its files (lib${s_LIBRARY}.a, .so) would clash")
  endif()
  set_property(GLOBAL PROPERTY "_FUSEGEN_ADD_LIBRARY_${CMAKE_CURRENT_BINARY_DIR}/${s_LIBRARY}" "${t}")
  _fusegen_add_objects(${t}_objects SPECS "${FG_SPEC}" OUTPUT_DIR "${FG_OUTPUT_DIR}" ARCHS ${FG_ARCHS}
    TUNING ${FG_TUNING}
    COMPILE_OPTIONS
      $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-warn-spills --Werror=all-warnings -Xcompiler=-Wall>
      $<$<COMPILE_LANGUAGE:C>:${FUSEGEN_C_WARNINGS}>)
  set(lib ${${t}_objects_LIBRARIES})

  add_library(${t} STATIC $<TARGET_OBJECTS:${t}_objects>)
  add_library(${t}_shared SHARED $<TARGET_OBJECTS:${t}_objects>)
  get_target_property(dirs ${t}_objects INTERFACE_INCLUDE_DIRECTORIES)
  # The static library leaves the runtime to the program's link; the shared one carries it
  # whole, so that loading the .so alone (from Python, say) gives the complete C API.
  target_link_libraries(${t} PUBLIC ${FUSEGEN_RUNTIME_TARGET} CUDA::cudart)
  target_link_libraries(${t}_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${FUSEGEN_RUNTIME_TARGET}>"
                                    PUBLIC CUDA::cudart)
  target_include_directories(${t}_shared PUBLIC
    $<TARGET_PROPERTY:${FUSEGEN_RUNTIME_TARGET},INTERFACE_INCLUDE_DIRECTORIES>)
  foreach(lt ${t} ${t}_shared)
    target_include_directories(${lt} PUBLIC ${dirs})
    set_target_properties(${lt} PROPERTIES
      OUTPUT_NAME ${lib}
      LINKER_LANGUAGE CUDA
      CUDA_RUNTIME_LIBRARY Shared)
  endforeach()
endfunction()

# ---- the user's way in -----------------------------------------------------------------------
function(_fusegen_generate target)
  cmake_parse_arguments(PARSE_ARGV 1 FG "" "OUTPUT_DIR" "SPECS;ARCHS;KERNELS;TUNING")
  if(FG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fusegen_generate: unknown arguments: ${FG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "fusegen_generate: '${target}' is not a target")
  endif()
  if(NOT FG_SPECS)
    message(FATAL_ERROR "fusegen_generate(${target}): SPECS is required")
  endif()
  if(TARGET ${target}_fusegen)
    message(FATAL_ERROR "fusegen_generate(${target}): called before for this target; give all its specs in one call (SPECS a.json b.json)")
  endif()
  if(NOT FG_ARCHS)
    set(FG_ARCHS ${FUSEGEN_CUDA_ARCHITECTURES})
  endif()
  if(NOT FG_OUTPUT_DIR)
    set(FG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/fusegen_generated/${target}")
  endif()
  get_filename_component(FG_OUTPUT_DIR "${FG_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")

  _fusegen_add_objects(${target}_fusegen SPECS ${FG_SPECS} OUTPUT_DIR "${FG_OUTPUT_DIR}" ARCHS ${FG_ARCHS}
                       KERNELS ${FG_KERNELS} TUNING ${FG_TUNING})
  # The objects join the target; their usage requirements (the generated headers' folders,
  # the runtime and CUDA::cudart) come with them.
  target_link_libraries(${target} PRIVATE ${target}_fusegen)
  # One CUDA runtime in the program: the shared one that fusegen::runtime links. A target made
  # before CUDA was enabled has no CUDA_ARCHITECTURES, which CMake requires once CUDA objects
  # are linked into it: it gets the kernels' archs (its own CUDA sources, if any, keep theirs).
  get_target_property(rt ${target} CUDA_RUNTIME_LIBRARY)
  if(NOT rt)
    set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
  endif()
  get_target_property(archs ${target} CUDA_ARCHITECTURES)
  if(NOT archs)
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${FG_ARCHS}")
  endif()
endfunction()

# Macros, so that they can enable CUDA (and C, for the dispatch table) in the caller's folder
# when the project has not: enable_language() may not be called from inside a function.
macro(_fusegen_enable_languages)
  get_property(_fusegen_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST _fusegen_languages)
    enable_language(C)
  endif()
  if(NOT "CUDA" IN_LIST _fusegen_languages)
    enable_language(CUDA)
  endif()
  unset(_fusegen_languages)
endmacro()

macro(fusegen_generate)
  _fusegen_enable_languages()
  _fusegen_generate(${ARGV})
endmacro()

macro(fusegen_add_library)
  _fusegen_enable_languages()
  _fusegen_add_library(${ARGV})
endmacro()
