#!/bin/sh
# tune_cli_test.sh FUSEGEN_TUNE SOURCE_DIR [LLAMA_BLOCK_SO] - the fusegen-tune command line where
# it needs no GPU: usage errors and bad shapes or recording files exit 2 with a message before any
# device is looked for; good inputs get as far as the device (77 without one). LLAMA_BLOCK_SO (the
# example library built as a shared object): --library reads its table and checks the problems
# against its spec kernels.
# POSIX sh; prints "N passed, N failed".
set -u

TUNE=$1
SRC=$2
LLAMA_SO=${3:-}
case $TUNE in /*) ;; *) TUNE=$(pwd)/$TUNE ;; esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-tune-cli-XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM

passed=0
failed=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# run EXPECTED_STATUS NAME ARGS... : runs fusegen-tune, keeps stdout/stderr in $TMP/out, $TMP/err.
run() {
    want=$1; name=$2; shift 2
    "$TUNE" "$@" >"$TMP/out" 2>"$TMP/err"
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
expect_grep help "$TMP/out" 'fusegen-tune \[--library FILE.so \[--symbol NAME\] | --spec SPEC.json\]'
expect_grep help "$TMP/out" '(--shapes FILE | --record FILE)\.\.\.'
run 2 no-input
expect_grep no-input "$TMP/err" 'usage: fusegen-tune'
run 2 unknown-option --frobnicate x
expect_grep unknown-option "$TMP/err" "unknown option '--frobnicate'"
run 2 missing-value --shapes
expect_grep missing-value "$TMP/err" "--shapes needs a value"
run 2 runs-zero --runs 0 --shapes bench/shapes.json
expect_grep runs-zero "$TMP/err" "--runs takes an integer from 1 to 100000"
run 2 seed-word --seed x --shapes bench/shapes.json
expect_grep seed-word "$TMP/err" "--seed takes an unsigned integer"
run 2 no-such-file --shapes "$TMP/none.json"
expect_grep no-such-file "$TMP/err" "cannot open $TMP/none.json"

printf '{"fused": [{"m": 64, "n": 768}' >"$TMP/broken.json"
run 2 shapes-not-json --shapes "$TMP/broken.json"
expect_grep shapes-not-json "$TMP/err" "is not valid JSON"
printf '[{"m": 64, "n": 768, "k": 768, "spec_kernel": "nope"}]' >"$TMP/spec.json"
run 2 unknown-spec-kernel --shapes "$TMP/spec.json"
expect_grep unknown-spec-kernel "$TMP/err" "library fusegen_default has no spec kernel 'nope'"
printf '[{"m": 64, "n": 768, "k": 768, "n2": 3072, "spec_kernel": "proj"}]' >"$TMP/chain.json"
run 2 n2-for-single --shapes "$TMP/chain.json"
expect_grep n2-for-single "$TMP/err" "'proj' is a single GEMM; n2 must be 0 or absent"
printf '[{"m": -1, "n": 768, "k": 768}]' >"$TMP/neg.json"
run 2 negative-m --shapes "$TMP/neg.json"
expect_grep negative-m "$TMP/err" '"m" must be a non-negative integer'

printf '%s\n%s\n' '{"library": "other", "spec_kernel": "x", "m": 1, "n": 8, "k": 8}' 'not json' >"$TMP/bad.jsonl"
run 2 record-bad-line --record "$TMP/bad.jsonl"
expect_grep record-bad-line "$TMP/err" "bad.jsonl:2: not a JSON object"
printf '%s\n' '{"library": "other", "spec_kernel": "x", "m": 1, "n": 8, "k": 8}' >"$TMP/other.jsonl"
run 2 record-other-library --record "$TMP/other.jsonl"
expect_grep record-other-library "$TMP/out" "1 line(s) of other libraries skipped"
expect_grep record-other-library "$TMP/err" "the inputs hold no problem for library fusegen_default"

# --library: a shared object that cannot be loaded, one without the table, --symbol alone
run 2 library-missing --library "$TMP/libnone.so" --shapes bench/shapes.json
expect_grep library-missing "$TMP/err" "--library $TMP/libnone.so: cannot load it"
run 2 library-no-table --library libm.so.6 --shapes bench/shapes.json
expect_grep library-no-table "$TMP/err" "no symbol m_library (give the table's name with --symbol)"
run 2 library-named-symbol --library libm.so.6 --symbol nope_library --shapes bench/shapes.json
expect_grep library-named-symbol "$TMP/err" "no symbol nope_library"
run 2 symbol-alone --symbol x_library --shapes bench/shapes.json
expect_grep symbol-alone "$TMP/err" "--symbol names the table of a --library; give --library too"
# --library with a real table: a spec kernel it lacks is refused; its own problems reach the device
if [ -n "$LLAMA_SO" ]; then
    printf '[{"m": 64, "n": 768, "k": 768, "spec_kernel": "proj"}]' >"$TMP/proj.json"
    run 2 library-other-kernel --library "$LLAMA_SO" --shapes "$TMP/proj.json"
    expect_grep library-other-kernel "$TMP/err" "library llama_block has no spec kernel 'proj'"
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then :; else
        run 77 library-no-device --library "$LLAMA_SO" --shapes bench/tune-shapes-llama.json -o "$TMP/t.json"
        expect_grep library-no-device "$TMP/err" "no CUDA device"
    fi
fi
# --spec: a missing file, a spec with an error (located), both --spec and --library
run 2 spec-missing --spec "$TMP/none.json" --shapes bench/shapes.json
expect_grep spec-missing "$TMP/err" "cannot open $TMP/none.json"
printf '{"library": "x", "kernels": [{"name": "k", "tiles": 3}]}' >"$TMP/badspec.json"
run 2 spec-error --spec "$TMP/badspec.json" --shapes bench/shapes.json
expect_grep spec-error "$TMP/err" "--spec $TMP/badspec.json: "
run 2 spec-and-library --spec specs/default.json --library libm.so.6 --shapes bench/shapes.json
expect_grep spec-and-library "$TMP/err" "--library and --spec each name the library to tune; give one"

# good inputs reach the device: 77 without one (0 with one would time them, which this test
# does not do: it runs only where no GPU is found)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "tune_cli: a GPU is present; the good-input case is left to fusegen-tune runs"
else
    printf '%s\n' '{"library": "fusegen_default", "spec_kernel": "proj", "m": 100, "n": 768, "k": 768}' \
        >"$TMP/good.jsonl"
    run 77 good-input-no-device --record "$TMP/good.jsonl" --shapes bench/shapes.json -o "$TMP/t.json"
    expect_grep good-input-no-device "$TMP/err" "no CUDA device"
    if [ -e "$TMP/t.json" ]; then fail "good-input-no-device: wrote $TMP/t.json"; else ok; fi
    # a good spec is checked, then the device is looked for (the JIT compiles for it)
    run 77 spec-no-device --spec specs/examples/llama_block.json --shapes bench/tune-shapes-llama.json -o "$TMP/t.json"
    expect_grep spec-no-device "$TMP/err" "no CUDA device"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
