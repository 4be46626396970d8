#!/bin/sh
# bench/ab_compare.py on fixture CSVs (tests/cli/ab): medians, B/A, the in-run ratio, spreads;
# rows that are not the selected kernel's, or whose check failed, are left out; a third build is
# compared with A too; bad input exits 2; fusegen's SM clock columns appear only when the CSVs
# carry them (a row without a clock shows '-'); --plain compares fusegen's plain GEMM column.
#   ab_compare_test.sh PYTHON SOURCE_DIR
py=$1 src=$2
ab=$src/tests/cli/ab
cmp=$src/bench/ab_compare.py
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
out=$("$py" "$cmp" "$ab/a1.csv" "$ab/a2.csv" -- "$ab/b1.csv" "$ab/b2.csv")
echo "$out"
check "runs counted" 'echo "$out" | grep -q "^2 run(s) of A, 2 of B"'
check "p one: medians, B/A 1.100, in-run 1.000, spreads" \
  'echo "$out" | grep -Eq "^p one +0\.2100 +0\.2310 +1\.100 +1\.000 +10\.0% +0\.0%$"'
check "p two left out (failed check in b1, missing in b2)" '! echo "$out" | grep -q "^p two"'
check "geometric mean" 'echo "$out" | grep -Eq "^geometric mean +1\.100 +1\.000$"'
"$py" "$cmp" "$ab/a1.csv" >/dev/null 2>&1; check "no -- : exit 2" '[ $? -eq 2 ]'
"$py" "$cmp" "$ab/missing.csv" -- "$ab/b1.csv" >/dev/null 2>&1; check "missing file: exit 2" '[ $? -eq 2 ]'
"$py" "$cmp" "$ab/b2.csv" -- "$ab/a1.csv" "$ab/b1.csv" >/dev/null 2>&1
check "p one only in common, still compared" '[ $? -eq 0 ]'
out3=$("$py" "$cmp" "$ab/a1.csv" -- "$ab/b1.csv" -- "$ab/b2.csv")
check "three builds: B and C each against A" \
  'echo "$out3" | grep -q "^1 run(s) of A, 1 of B" && echo "$out3" | grep -q "^1 run(s) of A, 1 of C" &&
   echo "$out3" | grep -Eq "^problem +A +C +C/A +C/A in-run"'
"$py" "$cmp" "$ab/a1.csv" -- -- "$ab/b1.csv" >/dev/null 2>&1; check "empty group: exit 2" '[ $? -eq 2 ]'
check "no clock columns without fusegen_mhz" '! echo "$out" | grep -q "MHz"'
outp=$("$py" "$cmp" --plain "$ab/a1.csv" "$ab/a2.csv" -- "$ab/b1.csv" "$ab/b2.csv")
check "--plain: fusegen's plain GEMM compared (B/A 1.000, in-run 0.909)" \
  'echo "$outp" | grep -Eq "^p one +0\.1000 +0\.1000 +1\.000 +0\.909 +0\.0% +0\.0%$"'
outc=$("$py" "$cmp" "$ab/c1.csv" -- "$ab/c2.csv")
echo "$outc"
check "clock columns: medians per side" 'echo "$outc" | grep -Eq "^p one +0\.2000 +0\.1900 +0\.950 +0\.950 +0\.0% +0\.0% +1590 +1700$"'
check "clock columns: a row without clocks" 'echo "$outc" | grep -Eq "^p two .* +- +-$"'
exit $fail
