#!/bin/sh
# bench_cli_test.sh FUSEGEN_BENCH SOURCE_DIR - the fusegen-bench command line where it needs no
# GPU: usage errors and --spec errors exit 2 with a message, before any device is looked for.
# POSIX sh; prints "N passed, N failed".
set -u

BENCH=$1
SRC=$2
case $BENCH in /*) ;; *) BENCH=$(pwd)/$BENCH ;; esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-bench-cli-XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM

passed=0
failed=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# run EXPECTED_STATUS NAME ARGS... : runs fusegen-bench, keeps stdout/stderr in $TMP/out, $TMP/err.
run() {
    want=$1; name=$2; shift 2
    "$BENCH" "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else
        fail "$name: exit status $got, expected $want"
        sed 's/^/  | /' "$TMP/out" "$TMP/err" >&2
    fi
}
expect_grep() {
    if grep -q -- "$3" "$2"; then ok; else fail "$1: no line matching '$3' in:"; sed 's/^/  | /' "$2" >&2; fi
}

cd "$SRC" || exit 2

run 0 help --help
expect_grep help "$TMP/out" '--spec FILE'
run 2 unknown-option --frobnicate
expect_grep unknown-option "$TMP/err" "unknown option '--frobnicate'"
run 2 reps-zero --reps 0
expect_grep reps-zero "$TMP/err" "give a whole number"
run 2 spec-no-value --spec
expect_grep spec-no-value "$TMP/err" '--spec needs a value'
run 2 b-layout-bad --b-layout tn
expect_grep b-layout-bad "$TMP/err" "--b-layout takes nk or kn, not 'tn'"
run 0 help-b-layout --help
expect_grep help-b-layout "$TMP/out" '--b-layout nk|kn'

# A spec that cannot be read, and one with errors: located diagnostics, exit 2, no GPU needed.
run 2 spec-missing --spec "$TMP/none.json"
expect_grep spec-missing "$TMP/err" 'none.json: cannot open'
printf '{"library": "x",\n "kernels": [ {"name": 3} ]}\n' >"$TMP/bad.json"
run 2 spec-bad --spec "$TMP/bad.json"
expect_grep spec-bad "$TMP/err" 'FUSEGEN_ERR_SPEC'
expect_grep spec-bad "$TMP/err" 'bad.json:2:24: error: /kernels/0/name: expected a string'
# Shapes are checked before the spec; an unknown --only is a usage error too.
run 2 only-nothing --only no-such-problem-anywhere --spec specs/default.json

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
