#!/bin/sh
# reserved_names_test.sh FUSEGEN SOURCE_DIR - a library X declares X_library and writes X.h on
# its users' include path: X may not make a name the runtime's public headers declare (every
# fusegen_*_library name in runtime/fusegen.h, fusegen_jit.h and fusegen_workspace.h is tried,
# so the generator's list stays complete as the headers grow), nor a header it would shadow.
set -u
FUSEGEN=$1
SRC=$2
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
for n in fusegen_default my_lib fusegen_run fusegen_runner stdint2; do
    try "$n" 0 ""
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
