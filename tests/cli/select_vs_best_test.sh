#!/bin/sh
# bench/select_vs_best.py on a fixture CSV (tests/cli/select/all-variants.csv) and log (.log): the fastest
# variant whose check passed is the reference (a faster failed one is not), the ratio is the
# selected one's time over it, the summary is their geometric mean and maximum; a problem whose
# selected variant failed exits 1, input that is not such a CSV exits 2.
#   select_vs_best_test.sh PYTHON SOURCE_DIR
py=$1 src=$2
tool=$src/bench/select_vs_best.py
fixture=$src/tests/cli/select/all-variants.csv
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-select-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
out=$("$py" "$tool" "$fixture")
rc=$?
echo "$out"
check "exit 0" '[ $rc -eq 0 ]'
check "the fastest that passed is the reference" 'echo "$out" | grep -Eq "first .*selected/best 2\.000 of 3 variants +\(best: k_b\)"'
check "the selected one is the fastest" 'echo "$out" | grep -Eq "second .*selected/best 1\.000 of 2 variants$"'
check "a chain's shape" 'echo "$out" | grep -Eq "third +64x1024x1024->4096 +selected/best 1\.020"'
check "summary" 'echo "$out" | grep -q "geometric mean 1.268, max 2.000 over 3 problems; 1 above 1.03"'
sed 's/"k_a",1,ok/"k_a",1,FAIL/' "$fixture" >"$tmp/failed.csv"
"$py" "$tool" "$tmp/failed.csv" >"$tmp/out" 2>&1
rc=$?
check "a selected variant that failed: exit 1" '[ $rc -eq 1 ] && grep -q "first .*no selected variant that passed" "$tmp/out"'
echo "a,b" >"$tmp/other.csv"
"$py" "$tool" "$tmp/other.csv" >/dev/null 2>&1
check "not such a CSV: exit 2" '[ $? -eq 2 ]'
"$py" "$tool" "$tmp/missing.csv" >/dev/null 2>&1
check "a missing file: exit 2" '[ $? -eq 2 ]'
# --model: the first variant of the tool's order that was timed (a stand-in tool prints an order)
cat >"$tmp/order" <<'ORDER'
#!/bin/sh
echo "ln ($*):"
echo "  ln_sm90a_untimed"
echo "  ln_sm90a_b"
echo "  ln_sm90a_a"
echo "other (M 1):"
echo "  other_sm90a_x"
ORDER
chmod +x "$tmp/order"
sed -e 's/"k_a"/"ln_sm90a_a"/; s/"k_b"/"ln_sm90a_b"/' "$fixture" | grep -v '^chain\|k_bad' >"$tmp/model.csv"
out=$("$py" "$tool" --model "$tmp/order" --sms 100 "$tmp/model.csv")
rc=$?
echo "$out"
check "--model: exit 0" '[ $rc -eq 0 ]'
check "--model: the model's first timed variant" 'echo "$out" | grep -Eq "first .*selected/best 1\.000 of 2 variants$"'
check "--model: ... even where it is slower" 'echo "$out" | grep -Eq "second .*selected/best 1\.100 of 2 variants"'
# a tuning file (--model only): the model's first against each entry's winner and runner-up; the
# stand-in's first for ln is ln_sm90a_untimed at every size: the winner once (1.000), the
# runner-up once (0.025 / 0.020 = 1.250), another variant once; a spec kernel it lacks apart
out=$("$py" "$tool" --model "$tmp/order" "$src/tests/cli/select/tuning.json")
rc=$?
echo "$out"
check "a tuning file: exit 0" '[ $rc -eq 0 ]'
check "a tuning file: winner, runner-up, other, ratios" 'echo "$out" | grep -q "the winner on 1 of 3 entries, the runner-up on 1 (model/best over those: geometric mean 1.118, max 1.250), another variant on 1; 1 entries of spec kernels not in"'
"$py" "$tool" "$src/tests/cli/select/tuning.json" >/dev/null 2>&1
check "a tuning file without --model: exit 2" '[ $? -eq 2 ]'
# a log: its plain GEMMs, the first of a problem the selected one; a FAIL line is a failed check
out=$("$py" "$tool" "$src/tests/cli/select/all-variants.log")
rc=$?
echo "$out"
check "a log: a selected plain GEMM that failed: exit 1" '[ $rc -eq 1 ]'
check "a log: the plain GEMM against the fastest that passed" 'echo "$out" | grep -Eq "first \(plain\) +64x4096x4096 +selected/best 2\.000 of 3 variants +\(best: proj_sm90a_b\)"'
check "a log: the failed selected one" 'echo "$out" | grep -Eq "second \(plain\) +no selected variant that passed"'
[ $fail -eq 0 ] && echo "all passed"
exit $fail
