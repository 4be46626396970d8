# Bad specs too big to keep in the repository, written at test time. Used by run_case.cmake, by
# CMakeLists.txt (for the list), and by update.sh in script mode:
#   cmake -DGEN_CASE=deep_array -DGEN_OUT=cases/deep_array.json -P gen_cases.cmake
set(FUSEGEN_DIAG_GENERATED deep_array deep_object long_key long_utf8_name)

function(fusegen_diag_generate name path)
  if(name STREQUAL "deep_array")            # 200000 nested arrays
    string(REPEAT "[" 200000 open)
    string(REPEAT "]" 200000 close)
    file(WRITE "${path}" "${open}${close}\n")
  elseif(name STREQUAL "deep_object")       # 200000 nested objects
    string(REPEAT "{\"a\": " 200000 open)
    string(REPEAT "}" 200000 close)
    file(WRITE "${path}" "${open}1${close}\n")
  elseif(name STREQUAL "long_key")          # a 1,000,000-byte unknown key, and a string under it
    string(REPEAT "k" 1000000 key)
    file(WRITE "${path}" "{\"library\": \"lib\", \"${key}\": {\"x\": \"a\\u0000\"}, \"kernels\": []}\n")
  elseif(name STREQUAL "long_utf8_name")    # a library name of 500,000 two-byte characters
    string(ASCII 195 169 e)
    string(REPEAT "${e}" 500000 lib)
    file(WRITE "${path}" "{\"library\": \"${lib}\", \"kernels\": [{\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 32, \"stages\": 3}], \"epilogue\": []}]}\n")
  else()
    message(FATAL_ERROR "no generated case named '${name}'")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE AND DEFINED GEN_CASE)
  fusegen_diag_generate("${GEN_CASE}" "${GEN_OUT}")
endif()
