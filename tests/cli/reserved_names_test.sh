#!/bin/sh
# reserved_names_test.sh FUSEGEN SOURCE_DIR [ARCHIVE...] - a library X declares X_library and
# X_<kernel>_... symbols and writes X.h (guard X_H, in capitals) on its users' include path: X
# may not make a name the runtime's public headers declare (every fusegen_*_library name in
# runtime/fusegen.h, fusegen_jit.h and fusegen_workspace.h is tried, so the generator's list
# stays complete as the headers grow), nor a header it would shadow, nor a reserved include
# guard, nor symbols in the generator's own fg_ space. Each ARCHIVE (libfusegen_gen.a, the
# runtime's, the JIT's) must export only fg_* and fusegen_* symbols, so that rule covers them.
set -u
FUSEGEN=$1
SRC=$2
shift 2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-reserved-XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0

try() {   # try NAME EXPECTED_STATUS PATTERN
    cat >"$TMP/spec.json" <<JSON
{"library": "$1", "kernels": [
 {"name": "k", "arch": ["sm_80"], "a": "bf16", "b": "bf16", "out": "bf16",
  "tiles": [{"m": 128, "n": 128, "k": 64, "stages": 3}], "epilogue": [{"op": "relu"}]}]}
JSON
    "$FUSEGEN" check "$TMP/spec.json" >/dev/null 2>"$TMP/err"
    got=$?
    if [ "$got" -eq "$2" ] && { [ -z "$3" ] || grep -q -- "$3" "$TMP/err"; }; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: library '$1': exit status $got (expected $2), stderr:" >&2
        sed 's/^/  | /' "$TMP/err" >&2
    fi
}

# a library X declares X_library: every runtime name of that form must take its X away (today
# the runtime-header rule does, as those X are fusegen and fusegen_jit; a new one fails here)
names=$(grep -ohE '\bfusegen_([a-z0-9_]*_)?library\b' "$SRC/runtime/fusegen.h" "$SRC/runtime/fusegen_jit.h" \
        "$SRC/runtime/fusegen_workspace.h" | sort -u)
[ -n "$names" ] || { echo "FAIL: no *_library names found in the runtime headers" >&2; exit 1; }
for n in $names; do
    lib=${n%_library}
    try "$lib" 1 "/library: library name '$lib' would "
done
for n in fusegen FUSEGEN fusegen_internal stdint String cuda cuda_runtime_api cudaTypedefs nvrtc; do
    try "$n" 1 "/library: library name '$n' would make the header"
done
# glibc, POSIX, compiler and CUDA headers beyond the C standard's (issue 37: features.h)
for n in features alloca malloc endian getopt immintrin cuda_fp8 cudnn nccl cusparse nvml curand_kernel; do
    try "$n" 1 "/library: library name '$n' would make the header"
done
# include guards reserved for the implementation (_STDINT_H is glibc's) or by C++ ('__')
for n in _stdint _features _x _1; do
    try "$n" 1 "/library: library name '$n' would make the include guard _"
done
for n in a__b lib_ my__lib_; do
    try "$n" 1 "/library: library name '$n' would make names with '__'"
done
# the generator's and the runtime's internals export fg_* symbols: a library fg_emit defined the
# data fg_emit_library, which took the place of the generator's function in a program linking both
for n in fg fg_emit fg_arch_sm80 FG_emit Fg fg_jit; do
    try "$n" 1 "/library: library name '$n' would put its symbols"
done
for n in fusegen_default my_lib fusegen_run fusegen_runner stdint2 fgemm fg2 my_fg cjson features2; do
    try "$n" 0 ""
done

# every symbol the generator's and runtime's archives export is fg_* or fusegen_*
if [ $# -gt 0 ]; then
    if command -v nm >/dev/null 2>&1; then
        for lib in "$@"; do
            bad=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 { print $3 }' | grep -v -E '^(fg_|fusegen_|__)')   # __: the compiler's (sanitizers)
            if [ -n "$bad" ]; then
                failed=$((failed + 1))
                echo "FAIL: $lib exports symbols outside fg_* and fusegen_*:" >&2
                echo "$bad" | sed 's/^/  | /' >&2
            elif [ -z "$(nm -g --defined-only "$lib" 2>/dev/null)" ]; then
                failed=$((failed + 1))
                echo "FAIL: nm lists no symbols of $lib" >&2
            else
                passed=$((passed + 1))
            fi
        done
    else
        echo "note: no nm, the archives' symbols are not checked"
    fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
