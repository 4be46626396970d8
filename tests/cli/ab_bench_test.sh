#!/bin/sh
# scripts/ab-bench.sh without a GPU: a stub cmake "builds" each version into a fake
# fusegen-bench (it writes a fixture CSV of tests/cli/ab) and a fake kernel test, so the test
# checks the script's own work: --prepare from a git repository, the build and test steps, the
# example library's mode (--tune-example: a fake fusegen-tune writes fixture tuning files), the
# HGMMA comparison (a stub cuobjdump lists tests/cli/sass/kernels.sass, one HGMMA fewer for
# side c), the A B C rounds, the comparison, the bundle of logs (compare.txt and ab-logs.tar.gz
# alone under $OUT) and the refusals (bad options, missing ab/, a failing or hung kernel test
# times nothing).
#   ab_bench_test.sh SOURCE_DIR
src=$1
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# A tree holding the two files the script uses, as a git repository (for --prepare).
tree=$tmp/tree
mkdir -p "$tree/scripts" "$tree/bench" "$tmp/stub"
cp "$src/scripts/ab-bench.sh" "$tree/scripts/" &&
  cp "$src/bench/ab_compare.py" "$src/bench/ab_tune_compare.py" "$src/bench/sass_kloop.py" "$tree/bench/" ||
  exit 1
(cd "$tree" && git init -q && git -c user.name=t -c user.email=t@t add -A &&
   git -c user.name=t -c user.email=t@t commit -qm one) >/dev/null 2>&1 || { echo "FAIL  git repository"; exit 1; }

# The stub cmake: configuring does nothing; building DIR makes DIR/bench/fusegen-bench, which
# copies the fixture named by its CSV's file name (a-1.csv -> a1.csv; side c uses b's), and
# DIR/tests/gpu/fusegen_test_kernels, which fails for the side named in AB_TEST_FAIL_SIDE.
cat >"$tmp/stub/cmake" <<EOF
#!/bin/sh
[ "\$1" = --build ] || exit 0
dir=\$2
mkdir -p "\$dir/bench" "\$dir/tests/gpu"
side=\$(basename "\$(dirname "\$dir")")
echo "\$side" >"\$dir/libfusegen_default.a"
cat >"\$dir/bench/fusegen-bench" <<EOT
#!/bin/sh
while [ \\\$# -gt 0 ]; do [ "\\\$1" = --csv ] && csv=\\\$2; shift; done
name=\\\$(basename "\\\$csv" .csv)
side=\\\${name%%-*} round=\\\${name##*-}
[ "\\\$side" = c ] && side=b
cp "$src/tests/cli/ab/\\\$side\\\$round.csv" "\\\$csv"
echo "fake bench \\\$name"
EOT
cat >"\$dir/tests/gpu/fusegen_test_kernels" <<EOT
#!/bin/sh
[ "\\\${AB_TEST_FAIL_SIDE:-}" = "\$side" ] && { echo "1 passed, 1 failed"; exit 1; }
[ "\\\${AB_TEST_HANG_SIDE:-}" = "\$side" ] && exec sleep 60
echo "3 passed, 0 failed"
EOT
cat >"\$dir/bench/fusegen-tune" <<EOT
#!/bin/sh
while [ \\\$# -gt 0 ]; do [ "\\\$1" = -o ] && json=\\\$2; shift; done
name=\\\$(basename "\\\$json" .json)
side=\\\${name%%-*} round=\\\${name##*-}
[ "\\\$side" = c ] && side=b
cp "$src/tests/cli/ab/tune-\\\$side\\\$round.json" "\\\$json"
echo "fusegen-tune: 3 measured, 3 entries in \\\$json"
EOT
echo "\$side" >"\$dir/libllama_block.so"
cp "\$dir/tests/gpu/fusegen_test_kernels" "\$dir/tests/gpu/fusegen_test_kernels_llama"
chmod +x "\$dir/bench/fusegen-bench" "\$dir/bench/fusegen-tune" "\$dir/tests/gpu/fusegen_test_kernels" \\
  "\$dir/tests/gpu/fusegen_test_kernels_llama"
EOF
chmod +x "$tmp/stub/cmake"
# The stub cuobjdump: the fixture listing, side c's alpha_kernel with one HGMMA fewer.
cat >"$tmp/stub/cuobjdump" <<EOF
#!/bin/sh
for last; do :; done
if [ "\$(cat "\$last")" = c ]; then sed '16s/HGMMA/NOP/' "$src/tests/cli/sass/kernels.sass"; else cat "$src/tests/cli/sass/kernels.sass"; fi
EOF
chmod +x "$tmp/stub/cuobjdump"
run() { (cd "$tree" && PATH="$tmp/stub:$PATH" OUT="$tmp/out" sh -c "$1") >"$tmp/log" 2>&1; }

run 'bash scripts/ab-bench.sh --prepare HEAD HEAD HEAD'
check "--prepare: three refs into ab/a, ab/b, ab/c" \
  '[ $? -eq 0 ] && [ -f "$tree/ab/a/scripts/ab-bench.sh" ] && [ -f "$tree/ab/c/AB_REF" ] && grep -q "^ab/b: HEAD" "$tmp/log"'
run 'bash scripts/ab-bench.sh --prepare HEAD'
check "--prepare with one ref: exit 2" '[ $? -eq 2 ]'
run 'bash scripts/ab-bench.sh --prepare HEAD no-such-ref'
check "--prepare with an unknown ref: exit 2, named" '[ $? -eq 2 ] && grep -q "no-such-ref" "$tmp/log"'

rm -rf "$tmp/out"
run 'FUSEGEN_AB_TEST=x bash scripts/ab-bench.sh --rounds 2'
check "run: exit 0" '[ $? -eq 0 ]'
check "run: B and C tested before timing" 'grep -q "^ab/b: 3 passed, 0 failed" "$tmp/log" && grep -q "^ab/c: 3 passed" "$tmp/log"'
check "run: HGMMA per kernel against A's" \
  'grep -q "^ab/b: HGMMA as in the reference in all 3 kernels (hgmma-b.txt)" "$tmp/log" &&
   grep -q "^ab/c: HGMMA differs from the reference in 1 of 3 kernels (hgmma-c.txt)" "$tmp/log"'
check "run: rounds in turn, A B C" \
  '[ "$(grep -o "^round [12] [abc]" "$tmp/log" | tr "\n" " ")" = "round 1 a round 1 b round 1 c round 2 a round 2 b round 2 c " ]'
check "run: B against A (medians, B/A 1.100)" \
  'grep -Eq "^p one +0\.2100 +0\.2310 +1\.100 +1\.000" "$tmp/out/compare.txt" && grep -q "2 run(s) of A, 2 of B" "$tmp/out/compare.txt"'
check "run: C against A too" 'grep -q "2 run(s) of A, 2 of C" "$tmp/out/compare.txt"'
check "run: compare.txt, compare-plain.txt and ab-logs.tar.gz alone under OUT" \
  '[ "$(ls "$tmp/out" | tr "\n" " ")" = "ab-logs.tar.gz compare-plain.txt compare.txt " ] &&
   grep -q "^plain GEMM: geometric mean" "$tmp/log"'
check "run: the archive holds builds, tests, runs and CSVs" \
  'tar -tzf "$tmp/out/ab-logs.tar.gz" 2>/dev/null | grep -q "ab-logs/build-c.log" && tar -tzf "$tmp/out/ab-logs.tar.gz" 2>/dev/null | grep -q "ab-logs/test-b.log" &&
   [ "$(tar -tzf "$tmp/out/ab-logs.tar.gz" 2>/dev/null | grep -c "\.csv$")" -eq 6 ] &&
   tar -tzf "$tmp/out/ab-logs.tar.gz" 2>/dev/null | grep -q "ab-logs/hgmma-c.txt" &&
   ! tar -tzf "$tmp/out/ab-logs.tar.gz" 2>/dev/null | grep -q "ab-logs/sass-"'

rm -rf "$tmp/out"
run 'FUSEGEN_AB_TEST=x bash scripts/ab-bench.sh --tune-example --rounds 2'
check "--tune-example: exit 0, the example's kernel test first" \
  '[ $? -eq 0 ] && grep -q "^ab/b: 3 passed, 0 failed" "$tmp/log"'
check "--tune-example: rounds in turn, A B C, a tuning file each" \
  '[ "$(grep -o "^round [12] [abc]: rc=0 fusegen-tune: 3 measured" "$tmp/log" | wc -l)" -eq 6 ]'
check "--tune-example: B against A over the bare GEMM" \
  'grep -Eq "^qkv_rmsnorm +1 +6144 +4096 +0\.0310 +0\.0279 +0\.900 +1\.107 +0\.996$" "$tmp/out/compare.txt" &&
   grep -q "2 run(s) of A, 2 of C" "$tmp/out/compare.txt"'
check "--tune-example: the tuning files in the archive" \
  '[ "$(tar -tzf "$tmp/out/ab-logs.tar.gz" 2>/dev/null | grep -c "\.json$")" -eq 6 ]'

rm -rf "$tmp/out"
run 'AB_TEST_FAIL_SIDE=c FUSEGEN_AB_TEST=x bash scripts/ab-bench.sh'
check "a failing kernel test: exit 2, nothing timed, logs kept" \
  '[ $? -eq 2 ] && grep -q "ab/c.s kernel test failed" "$tmp/log" && ! grep -q "^round" "$tmp/log" &&
   tar -tzf "$tmp/out/ab-logs.tar.gz" 2>/dev/null | grep -q "test-c.log"'
rm -rf "$tmp/out"
started=$(date +%s)
run 'AB_TEST_HANG_SIDE=b FUSEGEN_AB_TIMEOUT=2 FUSEGEN_AB_TEST=x bash scripts/ab-bench.sh'
check "a hung kernel test: stopped by FUSEGEN_AB_TIMEOUT, exit 2, nothing timed" \
  '[ $? -eq 2 ] && [ $(($(date +%s) - started)) -lt 30 ] && grep -q "ab/b.s kernel test failed" "$tmp/log" &&
   grep -q "ran past FUSEGEN_AB_TIMEOUT (2 s)" "$tmp/log" && ! grep -q "^round" "$tmp/log"'
run 'bash scripts/ab-bench.sh --rounds two'
check "--rounds two: exit 2" '[ $? -eq 2 ]'
run 'FUSEGEN_AB_TIMEOUT=soon bash scripts/ab-bench.sh'
check "FUSEGEN_AB_TIMEOUT=soon: exit 2" '[ $? -eq 2 ] && grep -q "FUSEGEN_AB_TIMEOUT" "$tmp/log"'
rm -rf "$tree/ab"
run 'bash scripts/ab-bench.sh'
check "no ab/: exit 2, says what to run" '[ $? -eq 2 ] && grep -q "prepare" "$tmp/log"'
exit $fail
