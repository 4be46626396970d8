#!/bin/sh
# bench/ncu_durations.py on a fixture (tests/cli/ncu/durations.csv, written for this test in
# Nsight Compute's raw CSV form: its own unquoted messages around, a units row, thousands
# separators): the median a kernel name, longest first; not such a CSV exits 2.
#   ncu_durations_test.sh PYTHON SOURCE_DIR
py=$1 src=$2
tool=$src/bench/ncu_durations.py
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
out=$("$py" "$tool" "$src/tests/cli/ncu/durations.csv")
echo "$out"
check "median of three launches, in us, first" '[ "$(echo "$out" | sed -n 2p | tr -s " ")" = " 11.60 3 sm90_xmma_gemm_bf16" ]'
check "one launch, second" '[ "$(echo "$out" | sed -n 3p | tr -s " ")" = " 3.20 1 fusegen_default_x_reduce1" ]'
tmp=$(mktemp) || exit 1
sed 's/"nsecond"/"usecond"/' "$src/tests/cli/ncu/durations.csv" >"$tmp"
check "units row in us" '"$py" "$tool" "$tmp" | grep -Eq "^ +11600\.00 +3 +sm90_xmma_gemm_bf16$"'
echo '"a","b"' >"$tmp"
"$py" "$tool" "$tmp" >/dev/null 2>&1
check "not an ncu duration CSV: exit 2" '[ $? -eq 2 ]'
"$py" "$tool" "$src/tests/cli/ncu/missing.csv" >/dev/null 2>&1
check "missing file: exit 2" '[ $? -eq 2 ]'
rm -f "$tmp"
exit $fail
