#!/bin/sh
# bench_cli_test.sh FUSEGEN_BENCH SOURCE_DIR - the fusegen-bench command line where it needs no
# GPU: usage errors, shapes-file errors, result paths that cannot be written and --spec errors
# exit 2 with a message, before any device is looked for.
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
expect_grep only-nothing "$TMP/err" "no problem in .* matches 'no-such-problem-anywhere'"

# Shapes files: what the benchmark could not measure is refused before any GPU work.
shapes() { printf '%s\n' "$2" >"$TMP/$1.json"; }
shapes n-odd '{"fused": [{"name": "a", "m": 64, "n": 100, "k": 64}]}'
run 2 shapes-n-odd --shapes "$TMP/n-odd.json"
expect_grep shapes-n-odd "$TMP/err" "/fused/0/n = 100: the LayerNorm needs a multiple of 8 up to 32768"
shapes n-big '{"chains": [{"name": "a", "m": 64, "n": 65536, "k": 64, "n2": 64}]}'
run 2 shapes-n-big --shapes "$TMP/n-big.json"
expect_grep shapes-n-big "$TMP/err" "/chains/0/n = 65536"
shapes dup '{"fused": [{"name": "a", "m": 64, "n": 64, "k": 64}], "chains": [{"name": "a", "m": 64, "n": 64, "k": 64, "n2": 64}]}'
run 2 shapes-duplicate --shapes "$TMP/dup.json"
expect_grep shapes-duplicate "$TMP/err" "/chains/0/name: 'a' is the name of an earlier problem"
shapes typo '{"fused": [{"name": "a", "m": 64, "n": 64, "k": 64}], "chain": []}'
run 2 shapes-unknown-section --shapes "$TMP/typo.json"
expect_grep shapes-unknown-section "$TMP/err" "/chain: unknown key (expected: about, fused, chains)"
shapes n2 '{"fused": [{"name": "a", "m": 64, "n": 64, "k": 64, "n2": 64}]}'
run 2 shapes-unknown-key --shapes "$TMP/n2.json"
expect_grep shapes-unknown-key "$TMP/err" "/fused/0/n2: unknown key"
printf '{"fused": [{"name": "a\\tb", "m": 64, "n": 64, "k": 64}]}\n' >"$TMP/ctl.json"
run 2 shapes-control-name --shapes "$TMP/ctl.json"
expect_grep shapes-control-name "$TMP/err" "/fused/0/name: control characters are not allowed"
head -c 17000000 /dev/zero >"$TMP/huge.json"
run 2 shapes-huge --shapes "$TMP/huge.json"
expect_grep shapes-huge "$TMP/err" "larger than 16 MiB"

# Result files: checked before the run, so a run is never lost to a path that cannot be written.
shapes one '{"about": "x", "fused": [{"name": "a", "m": 64, "n": 64, "k": 64, "about": "y"}]}'
run 2 csv-folder --shapes "$TMP/one.json" --csv "$TMP"
expect_grep csv-folder "$TMP/err" "--csv .*: is a folder"
run 2 csv-no-folder --shapes "$TMP/one.json" --csv "$TMP/none/r.csv"
expect_grep csv-no-folder "$TMP/err" "its folder .*none cannot be written"
run 2 csv-json-same --shapes "$TMP/one.json" --csv "$TMP/r" --json "$TMP/r"
expect_grep csv-json-same "$TMP/err" "--csv and --json name the same file"
run 2 csv-plot-data --shapes "$TMP/one.json" --csv "$TMP/p.dat" --plot "$TMP/p.png"
expect_grep csv-plot-data "$TMP/err" "--csv and --plot's data file name the same file"
run 2 json-over-shapes --shapes "$TMP/one.json" --json "$TMP/./one.json"
expect_grep json-over-shapes "$TMP/err" "--json and --shapes name the same file"
if [ -e "$TMP/r" ] || [ -e "$TMP/p.dat" ]; then fail "a refused run wrote a result file"; else ok; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
