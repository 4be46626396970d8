#!/bin/sh
# bench/ab_tune_compare.py on fixture tuning files (tests/cli/ab/tune-*.json): medians over runs,
# B/A, each entry over the bare kernel's winner of its side (--bare), the geometric mean; the
# bare kernel's own rows left out; bad input exits 2.
#   ab_tune_compare_test.sh PYTHON SOURCE_DIR
py=$1 src=$2
ab=$src/tests/cli/ab
cmp=$src/bench/ab_tune_compare.py
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
out=$("$py" "$cmp" --bare linear "$ab/tune-a1.json" "$ab/tune-a2.json" -- "$ab/tune-b1.json" "$ab/tune-b2.json")
echo "$out"
check "runs counted" 'echo "$out" | grep -q "^2 run(s) of A, 2 of B"'
check "qkv: medians, B/A 0.900, over the bare GEMM 1.107 and 0.996" \
  'echo "$out" | grep -Eq "^qkv_rmsnorm +1 +6144 +4096 +0\.0310 +0\.0279 +0\.900 +1\.107 +0\.996$"'
check "an entry without a bare shape: dashes" 'echo "$out" | grep -Eq "^down_residual +1 +4096 +14336 +0\.0500 +0\.0550 +1\.100 +- +-$"'
check "the bare kernel's rows left out" '! echo "$out" | grep -q "^linear"'
check "geometric mean" 'echo "$out" | grep -q "^geometric mean B/A 0.995 over 2 entries"'
"$py" "$cmp" "$ab/tune-a1.json" >/dev/null 2>&1; check "one group: exit 2" '[ $? -eq 2 ]'
"$py" "$cmp" "$ab/missing.json" -- "$ab/tune-b1.json" >/dev/null 2>&1; check "missing file: exit 2" '[ $? -eq 2 ]'
"$py" "$cmp" "$ab/a1.csv" -- "$ab/tune-b1.json" >/dev/null 2>&1; check "not a tuning file: exit 2" '[ $? -eq 2 ]'
exit $fail
