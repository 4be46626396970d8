#!/bin/sh
# bench/perf_table.py on a fixture benchmark CSV (tests/cli/select/bench.csv): a table row per
# problem whose check passed (variant names less the spec kernel's), the chain in its own table,
# and the geometric means (0.8 and 1.2: 0.980), decode (M <= 256) apart, and the problems slower
# than unfused.
#   perf_table_test.sh PYTHON SOURCE_DIR
py=$1 src=$2
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
out=$("$py" "$src/bench/perf_table.py" "$src/tests/cli/select/bench.csv")
rc=$?
echo "$out"
check "exit 0" '[ $rc -eq 0 ]'
check "a fused row" 'echo "$out" | grep -Fq "| small | 64x4096x4096 | 0.0100 | 0.0160 | 0.0200 | 0.0150 | 0.800 | 2.000 | 1.500 | sm90a_64x128x64_s4_splitk |"'
check "a failed check leaves the table" '! echo "$out" | grep -q "| failed |"'
check "the chain" 'echo "$out" | grep -Fq "| tail | 64x1024x1024->4096 | 0.0200 | 0.0300 | 0.0300 | 1.500 | 1.000 | sm90a_64x256x64_s4_split_g2_128x256x64_s3 |"'
check "geometric mean" 'echo "$out" | grep -Fq "unfused/fused: geomean 0.980 over 2 problems (0.80-1.20)"'
check "decode" 'echo "$out" | grep -Fq "decode (M <= 256): geomean 0.800 over 1"'
check "slower ones" 'echo "$out" | grep -Fq "slower than unfused by more than 2%: 1 of 3 (small)"'
"$py" "$src/bench/perf_table.py" >/dev/null 2>&1
check "no file: exit 2" '[ $? -eq 2 ]'
[ $fail -eq 0 ] && echo "all passed"
exit $fail
