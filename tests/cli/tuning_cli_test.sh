#!/bin/sh
# tuning_cli_test.sh FUSEGEN SOURCE_DIR - `fusegen generate|check --tuning FILE`: the dispatch
# table generated from tests/golden/emit/small.json with the two files of tests/golden/tuning/
# (in either order) is tests/golden/tuning/expected/golden_small_dispatch.c byte for byte, and
# each error in a tuning file is reported as FILE:LINE:COL: error: /pointer: message, with exit
# status 1 and nothing written. POSIX sh; prints "N passed, N failed".
set -u

FUSEGEN=$1
SRC=$2
case $FUSEGEN in /*) ;; *) FUSEGEN=$(pwd)/$FUSEGEN ;; esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-tuning-cli-XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM

passed=0
failed=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# run EXPECTED_STATUS NAME ARGS...: runs fusegen, keeps stdout/stderr in $TMP/out, $TMP/err.
run() {
    want=$1; name=$2; shift 2
    "$FUSEGEN" "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else
        fail "$name: exit status $got, expected $want"
        sed 's/^/  | /' "$TMP/out" "$TMP/err" >&2
    fi
}
expect_grep() {
    if grep -q -F -- "$3" "$2"; then ok; else fail "$1: no line holding '$3' in:"; sed 's/^/  | /' "$2" >&2; fi
}

cd "$SRC" || exit 2
SPEC=tests/golden/emit/small.json
H200=tests/golden/tuning/small_h200.json
H100=tests/golden/tuning/small_h100.json
EXPECTED=tests/golden/tuning/expected/golden_small_dispatch.c
HASH=10217548f9e5199f946bd5812d549f5d718da708122ed6a8e1e009795abc3e2e

# the golden table, from either order of the files; check accepts them
run 0 generate generate "$SPEC" --tuning "$H200" --tuning "$H100" -o "$TMP/a" --templates templates -q
if cmp -s "$EXPECTED" "$TMP/a/golden_small/golden_small_dispatch.c"; then ok; else
    fail "generate: the table differs from $EXPECTED"; diff "$EXPECTED" "$TMP/a/golden_small/golden_small_dispatch.c" >&2
fi
run 0 generate-reversed generate --tuning="$H100" "$SPEC" --tuning "$H200" -o "$TMP/b" --templates templates -q
if cmp -s "$EXPECTED" "$TMP/b/golden_small/golden_small_dispatch.c"; then ok; else fail "generate-reversed: the table differs"; fi
# the depfile names the tuning files
run 0 depfile generate "$SPEC" --tuning "$H200" -o "$TMP/c" --templates templates -q --depfile "$TMP/c.d"
expect_grep depfile "$TMP/c.d" "$H200"
# --only: the entries of the variants it leaves out are left out (the files are checked whole)
run 0 only generate "$SPEC" --only proj_scale_gelu --tuning "$H200" --tuning "$H100" -o "$TMP/d" --templates templates -q
expect_grep only "$TMP/d/golden_small/golden_small_dispatch.c" '{ "proj_scale_gelu", 64, 4096, 4096, 0, 0, 0.031, -1 },'
expect_grep only "$TMP/d/golden_small/golden_small_dispatch.c" '{ "NVIDIA H100 80GB HBM3", 132, 90, NULL, 0 },'
run 0 check check "$SPEC" --tuning "$H200" --tuning "$H100"
expect_grep check "$TMP/out" "ok: library golden_small"
run 2 list list "$SPEC" --tuning "$H200"
expect_grep list "$TMP/err" "option '--tuning' does not apply to 'list'"
run 2 missing-value generate "$SPEC" -o "$TMP/x" --tuning
expect_grep missing-value "$TMP/err" "option '--tuning' needs a file name"
run 2 no-such-file check "$SPEC" --tuning "$TMP/none.json"
expect_grep no-such-file "$TMP/err" "cannot open '$TMP/none.json'"

# bad FILE CONTENT NAME EXPECTED...: generate with FILE holding CONTENT fails (1) with each
# EXPECTED line fragment on stderr, and writes nothing.
bad() {
    name=$1; content=$2; shift 2
    printf '%s\n' "$content" >"$TMP/$name.json"
    run 1 "$name" generate "$SPEC" --tuning "$TMP/$name.json" -o "$TMP/out-$name" --templates templates
    for e in "$@"; do expect_grep "$name" "$TMP/err" "$e"; done
    if [ -e "$TMP/out-$name" ]; then fail "$name: something was written"; else ok; fi
}
DEV='"device": {"name": "NVIDIA H200", "sms": 132, "cc": 90}'
LIB="\"library\": {\"name\": \"golden_small\", \"spec_sha256\": \"$HASH\"}"
E='"spec_kernel": "proj_scale_gelu", "m_bucket": 64, "n": 4096, "k": 4096, "n2": 0, "winner_ms": 0.03'
W='"winner": "proj_scale_gelu_sm80_128x128x32_s4"'

bad syntax "{\"fusegen_tuning\": 1,
 $DEV,}" "syntax.json:2:" "error: syntax error"
bad not-object '[1]' "not-object.json:1:1: error: a tuning file is a JSON object"
bad no-version "{$DEV, $LIB, \"entries\": []}" 'no "fusegen_tuning" version: not a tuning file'
bad version-2 "{\"fusegen_tuning\": 2, $DEV, $LIB, \"entries\": []}" \
    "version-2.json:1:20: error: /fusegen_tuning: version 2; this generator reads version 1"
bad device-sms "{\"fusegen_tuning\": 1, \"device\": {\"name\": \"NVIDIA H200\", \"sms\": \"132\", \"cc\": 90}, $LIB, \"entries\": []}" \
    "error: /device/sms: must be an integer from 1 to 65535"
bad no-cc "{\"fusegen_tuning\": 1, \"device\": {\"name\": \"NVIDIA H200\", \"sms\": 132}, $LIB, \"entries\": []}" \
    'error: /device: no "cc"'
bad other-library "{\"fusegen_tuning\": 1, $DEV, \"library\": {\"name\": \"fusegen_default\", \"spec_sha256\": \"$HASH\"}, \"entries\": []}" \
    "error: /library/name: the file was measured for library 'fusegen_default', which no spec given defines"
bad other-hash "{\"fusegen_tuning\": 1, $DEV, \"library\": {\"name\": \"golden_small\", \"spec_sha256\": \"abc123\"},
 \"entries\": []}" \
    "other-hash.json:1:" "/library/spec_sha256: the file was measured for another spec of library 'golden_small' (spec sha256 abc123); the spec given ($SPEC) has sha256 $HASH"
bad entries-not-array "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": {}}" "error: /entries: must be an array"
bad winner-other-kernel "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {$E, \"winner\": \"proj_bias_residual_layernorm_sm80_64x128x32_s3_split\"}]}" \
    "winner-other-kernel.json:2:" "/entries/0/winner: 'proj_bias_residual_layernorm_sm80_64x128x32_s3_split' is not a variant of kernel 'proj_scale_gelu' that library 'golden_small' plans"
bad runner-up-unknown "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {$E, $W, \"runner_up\": \"nope\", \"runner_up_ms\": 0.04}]}" \
    "error: /entries/0/runner_up: 'nope' is not a variant of kernel 'proj_scale_gelu'"
bad unknown-kernel "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {\"spec_kernel\": \"nope\", \"m_bucket\": 64, \"n\": 4096, \"k\": 4096, \"n2\": 0, \"winner\": \"x\", \"winner_ms\": 1}]}" \
    "error: /entries/0/spec_kernel: 'nope' is not a kernel of library 'golden_small'"
bad m-bucket "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {\"spec_kernel\": \"proj_scale_gelu\", \"m_bucket\": 48, \"n\": 4096, \"k\": 4096, \"n2\": 0, $W, \"winner_ms\": 1}]}" \
    "error: /entries/0/m_bucket: must be a power of two from 1 to 2^31"
bad n-fraction "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {\"spec_kernel\": \"proj_scale_gelu\", \"m_bucket\": 64, \"n\": 4096.0, \"k\": 4096, \"n2\": 0, $W, \"winner_ms\": 1}]}" \
    "n-fraction.json:2:58: error: /entries/0/n: must be an integer from 1 to 2^31 - 1"
bad no-winner-ms "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {\"spec_kernel\": \"proj_scale_gelu\", \"m_bucket\": 64, \"n\": 4096, \"k\": 4096, \"n2\": 0, $W}]}" \
    'error: /entries/0: the entry has no "winner_ms"'
bad negative-time "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {\"spec_kernel\": \"proj_scale_gelu\", \"m_bucket\": 64, \"n\": 4096, \"k\": 4096, \"n2\": 0, $W, \"winner_ms\": -1}]}" \
    "error: /entries/0/winner_ms: must be a time in milliseconds"
bad duplicate "{\"fusegen_tuning\": 1, $DEV, $LIB, \"entries\": [
 {$E, $W},
 {$E, $W}]}" \
    "duplicate.json:3:2: error: /entries/1: a second entry for kernel 'proj_scale_gelu' at m_bucket 64, n 4096, k 4096, n2 0" \
    "duplicate.json:2:2: note: /entries/0: the first is here"

# two files for one device and library
cp "$H200" "$TMP/again.json"
run 1 same-device generate "$SPEC" --tuning "$H200" --tuning "$TMP/again.json" -o "$TMP/out-same" --templates templates
expect_grep same-device "$TMP/err" "again.json:2:12: error: /device: a second tuning file for library 'golden_small' on device NVIDIA H200 (132 SMs, cc 90): $H200 is one too"
if [ -e "$TMP/out-same" ]; then fail "same-device: something was written"; else ok; fi
# check reports the same errors
run 1 check-bad check "$SPEC" --tuning "$TMP/other-hash.json"
expect_grep check-bad "$TMP/err" "/library/spec_sha256: the file was measured for another spec"

echo "tuning_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
