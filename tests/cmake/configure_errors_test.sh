#!/bin/sh
# configure_errors_test.sh FUSEGEN SOURCE_DIR [CMAKE] - what fusegen_generate() and fusegen_add_library()
# refuse at configure time, with fusegen's message rather than a raw CMake error or a failure
# later in the build. One tiny project, configured once (compiler detection) and then again for
# each case (-DCASE=...); the generator is the one just built, the runtime a stand-in target.
set -u
FUSEGEN=$1
SRC=$2
CMAKE=${3:-cmake}
case $FUSEGEN in /*) ;; *) FUSEGEN=$(pwd)/$FUSEGEN ;; esac
case $SRC in /*) ;; *) SRC=$(pwd)/$SRC ;; esac
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-cmake-XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0

mkdir "$TMP/p"
cat >"$TMP/p/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.24)
if(CASE STREQUAL "add_library_c_only")   # fusegen_add_library enables CUDA itself
  project(t LANGUAGES C)
else()
  project(t LANGUAGES C CUDA)
endif()
add_executable(fusegen IMPORTED)
set_target_properties(fusegen PROPERTIES IMPORTED_LOCATION "${FUSEGEN_EXE}")
add_library(fusegen_runtime INTERFACE)
set(FUSEGEN_TEMPLATE_DIR "${FUSEGEN_SRC}/templates")
include("${FUSEGEN_SRC}/cmake/fusegen_generate.cmake")
file(WRITE "${CMAKE_BINARY_DIR}/main.c" "int main(void) { return 0; }\n")
add_executable(app "${CMAKE_BINARY_DIR}/main.c")
if(CASE STREQUAL "bracket_glob")
  fusegen_generate(app SPECS mixed.json ARCHS 80 KERNELS "[p]_k")
elseif(CASE STREQUAL "portable_subset")      # the kept kernel is sm_80 only: 80 is enough
  fusegen_generate(app SPECS mixed.json ARCHS 80 KERNELS "p_*")
elseif(CASE STREQUAL "hopper_kept")
  fusegen_generate(app SPECS mixed.json ARCHS 80 KERNELS "*")
elseif(CASE STREQUAL "twice")
  fusegen_generate(app SPECS mixed.json ARCHS 80 KERNELS "p_*")
  fusegen_generate(app SPECS other.json ARCHS 80)
elseif(CASE STREQUAL "missing_spec")
  fusegen_generate(app SPECS missing.json ARCHS 80)
elseif(CASE STREQUAL "same_rule_twice")     # one folder, one OUTPUT_DIR, the same call: shared
  add_executable(app3 "${CMAKE_BINARY_DIR}/main.c")
  fusegen_generate(app SPECS mixed.json ARCHS 80 KERNELS "p_*" OUTPUT_DIR "${CMAKE_BINARY_DIR}/gen")
  fusegen_generate(app3 SPECS mixed.json ARCHS 80 KERNELS "p_*" OUTPUT_DIR "${CMAKE_BINARY_DIR}/gen")
elseif(CASE STREQUAL "other_kernels_same_dir")
  add_executable(app3 "${CMAKE_BINARY_DIR}/main.c")
  fusegen_generate(app SPECS mixed.json ARCHS 80 KERNELS "p_*" OUTPUT_DIR "${CMAKE_BINARY_DIR}/gen")
  fusegen_generate(app3 SPECS mixed.json ARCHS 80 90a-real KERNELS "h_*" OUTPUT_DIR "${CMAKE_BINARY_DIR}/gen")
elseif(CASE STREQUAL "add_library_relative")   # a relative OUTPUT_DIR is the build folder's
  fusegen_add_library(SPEC other.json OUTPUT_DIR gen TARGET_PREFIX rel ARCHS 80)
elseif(CASE STREQUAL "add_library_c_only")
  fusegen_add_library(SPEC other.json OUTPUT_DIR gen TARGET_PREFIX conly ARCHS 80)
elseif(CASE STREQUAL "add_library_typo")
  fusegen_add_library(SPEC other.json OUTPUT_DIR gen TARGET_PREFIX typo ARCH 80)
elseif(CASE STREQUAL "tuning_routed")        # each tuning file to the library it names
  fusegen_generate(app SPECS mixed.json other.json ARCHS 80 90a-real TUNING tune_other.json)
elseif(CASE STREQUAL "tuning_other_library")
  fusegen_generate(app SPECS mixed.json ARCHS 80 90a-real TUNING tune_other.json)
elseif(CASE STREQUAL "tuning_missing")
  fusegen_add_library(SPEC other.json OUTPUT_DIR gen TARGET_PREFIX tm ARCHS 80 TUNING missing_tune.json)
elseif(CASE STREQUAL "tuning_no_library")
  fusegen_generate(app SPECS other.json ARCHS 80 TUNING tune_nolib.json)
elseif(CASE STREQUAL "shared_output_dir")   # two folders, one OUTPUT_DIR
  fusegen_generate(app SPECS other.json ARCHS 80 OUTPUT_DIR "${CMAKE_BINARY_DIR}/gen")
  add_subdirectory(sub)
endif()
CMAKE
mkdir "$TMP/p/sub"
cat >"$TMP/p/sub/CMakeLists.txt" <<'CMAKE'
add_executable(app2 "${CMAKE_BINARY_DIR}/main.c")
fusegen_generate(app2 SPECS ../other.json ARCHS 80 OUTPUT_DIR "${CMAKE_BINARY_DIR}/gen")
CMAKE
cat >"$TMP/p/mixed.json" <<'JSON'
{"library": "mixed", "kernels": [
 {"name": "p_k", "arch": ["sm_80"], "a": "bf16", "b": "bf16", "out": "bf16",
  "tiles": [{"m": 128, "n": 128, "k": 64, "stages": 3}], "epilogue": [{"op": "relu"}]},
 {"name": "h_k", "arch": ["sm_90a"], "a": "bf16", "b": "bf16", "out": "bf16",
  "tiles": [{"m": 128, "n": 128, "k": 64, "stages": 3}], "epilogue": [{"op": "relu"}]}]}
JSON
cat >"$TMP/p/other.json" <<'JSON'
{"library": "other", "kernels": [
 {"name": "p_k", "arch": ["sm_80"], "a": "bf16", "b": "bf16", "out": "bf16",
  "tiles": [{"m": 128, "n": 128, "k": 64, "stages": 3}], "epilogue": [{"op": "relu"}]}]}
JSON

cat >"$TMP/p/tune_other.json" <<'JSON'
{"fusegen_tuning": 1, "device": {"name": "NVIDIA H200", "sms": 132, "cc": 90},
 "library": {"name": "other", "spec_sha256": "0"}, "entries": []}
JSON
printf '{"fusegen_tuning": 1, "entries": []}\n' >"$TMP/p/tune_nolib.json"

configure() {   # configure CASE EXPECTED_STATUS PATTERN
    "$CMAKE" -S "$TMP/p" -B "$build" "-DFUSEGEN_EXE=$FUSEGEN" "-DFUSEGEN_SRC=$SRC" "-DCASE=$1" \
        >"$TMP/out" 2>&1
    got=$?
    ok_status=0
    if [ "$2" -eq 0 ]; then [ "$got" -eq 0 ] && ok_status=1; else [ "$got" -ne 0 ] && ok_status=1; fi
    # CMake wraps its messages: look for the pattern in the output as one line
    tr '\n' ' ' <"$TMP/out" | tr -s ' ' >"$TMP/flat"
    if [ $ok_status -eq 1 ] && { [ -z "$3" ] || grep -q -- "$3" "$TMP/flat"; }; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: case $1: cmake exit status $got (expected $([ "$2" -eq 0 ] && echo 0 || echo nonzero)), looking for '$3':" >&2
        tail -20 "$TMP/out" | sed 's/^/  | /' >&2
    fi
}

build="$TMP/b"
configure none 0 ""
configure bracket_glob 1 "KERNELS glob '\[p\]_k' has \[, \] or"
configure portable_subset 0 ""
configure hopper_kept 1 "lists sm_90a for h_k but the CUDA architectures (80)"
configure twice 1 "fusegen_generate(app): called before for this target"
configure missing_spec 1 "spec '.*missing.json' does not exist"
if grep -q "failed to open" "$TMP/out"; then
    failed=$((failed + 1)); echo "FAIL: missing spec: a raw file error came first" >&2
else passed=$((passed + 1)); fi
configure same_rule_twice 0 ""
# generated into the build folder, where the object library looks (not next to the spec)
configure add_library_relative 0 ""
if grep -rqs -- "$TMP/p/gen" "$TMP/b" --include=*.make --include=*.ninja --include=Makefile; then
    failed=$((failed + 1)); echo "FAIL: add_library_relative: a path under the source folder's gen/" >&2
elif ! grep -rqs -- "$TMP/b/gen/other" "$TMP/b" --include=*.make --include=*.ninja --include=Makefile; then
    failed=$((failed + 1)); echo "FAIL: add_library_relative: no rule names the build folder's gen/other" >&2
else passed=$((passed + 1)); fi
# a project that enabled C only, configured from scratch (no CUDA compiler in its cache)
build="$TMP/b_c_only"
configure add_library_c_only 0 ""
build="$TMP/b"
configure add_library_typo 1 "fusegen_add_library: unknown arguments: ARCH;80"
configure tuning_routed 0 ""
if grep -rqs -- "--tuning $TMP/p/tune_other.json" "$TMP/b" --include=*.make --include=*.ninja --include=Makefile \
   && [ "$(grep -rhs -c -- "--tuning" "$TMP/b" --include=build.make | awk '{s += $1} END {print s}')" -eq 1 ]; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAIL: tuning_routed: not one generation rule with --tuning .../tune_other.json" >&2
fi
configure tuning_other_library 1 "tuning file '.*tune_other.json' is for library 'other', which none of the specs"
configure tuning_missing 1 "tuning file '.*missing_tune.json' does not exist"
configure tuning_no_library 1 "tuning file '.*tune_nolib.json' names no library"
configure other_kernels_same_dir 1 "library 'mixed' is already generated into .*gen from .*(KERNELS: p_\*)"
configure shared_output_dir 1 "library 'other' is already generated into .*gen from"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
