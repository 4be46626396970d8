# Runs one golden diagnostics case, or checks that the valid specs stay valid.
#   cmake -DFUSEGEN=path/to/fusegen -DSRC=<this folder> -DWORK=<scratch folder> -DCASE=name -P run_case.cmake
#     copies (or generates) cases/NAME.json into WORK, runs `fusegen check cases/NAME.json` there,
#     requires exit code 1 and stderr equal, byte for byte, to cases/NAME.err.
#   cmake -DFUSEGEN=... -DSPECS="a.json|b.json" -P run_case.cmake
#     requires exit code 0 and empty stderr for every spec listed.
if(NOT FUSEGEN)
  message(FATAL_ERROR "FUSEGEN not set")
endif()

if(DEFINED SPECS)
  string(REPLACE "|" ";" specs "${SPECS}")
  foreach(spec ${specs})
    execute_process(COMMAND "${FUSEGEN}" check "${spec}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
      message(FATAL_ERROR "${spec}: expected exit 0 and no diagnostics, got exit ${rc}:\n${err}")
    endif()
  endforeach()
  return()
endif()

include("${SRC}/gen_cases.cmake")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/cases")
if(EXISTS "${SRC}/cases/${CASE}.json")
  file(COPY "${SRC}/cases/${CASE}.json" DESTINATION "${WORK}/cases")
else()
  fusegen_diag_generate("${CASE}" "${WORK}/cases/${CASE}.json")
endif()

execute_process(COMMAND "${FUSEGEN}" check "cases/${CASE}.json" WORKING_DIRECTORY "${WORK}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ "${SRC}/cases/${CASE}.err" want)
file(WRITE "${WORK}/got.err" "${err}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "${CASE}: expected exit code 1, got ${rc}; stderr:\n${err}")
endif()
if(NOT err STREQUAL want)
  message(FATAL_ERROR "${CASE}: diagnostics differ from cases/${CASE}.err\n"
                      "--- expected\n${want}--- got (also in ${WORK}/got.err)\n${err}"
                      "(run tests/golden/diag/update.sh to regenerate after an intended change)")
endif()
