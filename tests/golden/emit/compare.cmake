# compare.cmake - golden test of emitted files. Runs, from SOURCE_DIR:
#   FUSEGEN generate SPEC -o WORK --templates templates
# and compares the tree WORK with the tree EXPECTED byte for byte (*.d files are ignored).
# Usage: cmake -DFUSEGEN=... -DSOURCE_DIR=... -DSPEC=... -DEXPECTED=... -DWORK=... -P compare.cmake
cmake_minimum_required(VERSION 3.24)
foreach(var FUSEGEN SOURCE_DIR SPEC EXPECTED WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "compare.cmake: -D${var}=... is required")
  endif()
endforeach()

if(NOT IS_DIRECTORY "${EXPECTED}")
  message(FATAL_ERROR "no expected tree at ${EXPECTED}; create it with tests/golden/emit/update.sh")
endif()

file(REMOVE_RECURSE "${WORK}")
execute_process(
  COMMAND "${FUSEGEN}" generate "${SPEC}" -o "${WORK}" --templates templates
  WORKING_DIRECTORY "${SOURCE_DIR}"
  RESULT_VARIABLE rc
  ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fusegen generate ${SPEC} failed (${rc}):\n${err}")
endif()

file(GLOB_RECURSE got RELATIVE "${WORK}" "${WORK}/*")
file(GLOB_RECURSE want RELATIVE "${EXPECTED}" "${EXPECTED}/*")
list(FILTER got EXCLUDE REGEX "\\.d$")
list(FILTER want EXCLUDE REGEX "\\.d$")
list(SORT got)
list(SORT want)

set(problems "")
foreach(f IN LISTS want)
  if(NOT f IN_LIST got)
    string(APPEND problems "  missing from the output: ${f}\n")
  endif()
endforeach()
find_program(DIFF_PROGRAM diff)
foreach(f IN LISTS got)
  if(NOT f IN_LIST want)
    string(APPEND problems "  not expected: ${f}\n")
    continue()
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${EXPECTED}/${f}" "${WORK}/${f}"
                  RESULT_VARIABLE differ OUTPUT_QUIET ERROR_QUIET)
  if(NOT differ EQUAL 0)
    string(APPEND problems "  differs: ${f}\n")
    if(DIFF_PROGRAM)
      execute_process(COMMAND "${DIFF_PROGRAM}" -u "${EXPECTED}/${f}" "${WORK}/${f}"
                      OUTPUT_VARIABLE udiff ERROR_QUIET)
      string(SUBSTRING "${udiff}" 0 4000 udiff)
      string(APPEND problems "${udiff}\n")
    endif()
  endif()
endforeach()

list(LENGTH got n_got)
if(problems)
  message("emitted files of ${SPEC} differ from ${EXPECTED}:\n${problems}")
  message(FATAL_ERROR "golden files differ. If the change is intended, run tests/golden/emit/update.sh "
                      "and review the diff.")
endif()
if(n_got EQUAL 0)
  message(FATAL_ERROR "fusegen generate ${SPEC} wrote no files")
endif()
message(STATUS "${n_got} files identical to ${EXPECTED}")
