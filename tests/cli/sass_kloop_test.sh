#!/bin/sh
# bench/sass_kloop.py on a fixture listing (tests/cli/sass/kernels.sass, written for this test in
# cuobjdump's format): branch targets as addresses (cuobjdump 13) and as labels (older ones), an
# out-of-line retry block that branches back into the loop (not the loop), a spin loop without
# wgmma, a kernel without wgmma (left out), one without a loop; no kernel with wgmma exits 1;
# --against compares HGMMA counts per kernel with another listing.
#   sass_kloop_test.sh PYTHON SOURCE_DIR
py=$1 src=$2
tool=$src/bench/sass_kloop.py
fixture=$src/tests/cli/sass/kernels.sass
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
out=$("$py" "$tool" "$fixture")
echo "$out"
check "address targets: the 9-instruction loop, not the retry block's 11" \
  'echo "$out" | grep -Eq "^ +9 instructions, +2 HGMMA +alpha_kernel$"'
check "label targets" 'echo "$out" | grep -Eq "^ +5 instructions, +1 HGMMA +beta_kernel$"'
check "a kernel without wgmma is left out" '! echo "$out" | grep -q gamma_kernel'
check "no loop around the wgmma" 'echo "$out" | grep -Eq "no loop found.*delta_kernel_straight_line$"'
sum=$("$py" "$tool" "$fixture" --summary)
check "summary" '[ "$sum" = "3 kernels, k loop 5-9 instructions (1 without a loop found)" ]'
sum=$("$py" "$tool" --summary <"$fixture")
check "standard input" '[ "$sum" = "3 kernels, k loop 5-9 instructions (1 without a loop found)" ]'
grep -v HGMMA "$fixture" | "$py" "$tool" >/dev/null 2>&1
check "no wgmma anywhere: exit 1" '[ $? -eq 1 ]'
"$py" "$tool" "$src/tests/cli/sass/missing.sass" >/dev/null 2>&1
check "missing file: exit 1 with a message" '[ $? -eq 1 ]'

# --against: HGMMA per kernel against a reference listing (a floor that drops wgmmas shows).
same=$("$py" "$tool" "$fixture" --against "$fixture")
check "--against itself: nothing differs" '[ "$same" = "HGMMA as in the reference in all 3 kernels" ]'
tmp=$(mktemp) || exit 1
sed -e '16s/HGMMA/NOP/' -e '74s/HGMMA/NOP/' "$fixture" >"$tmp"   # alpha 2 -> 1, delta 1 -> none
diff=$("$py" "$tool" "$tmp" --against "$fixture")
rm -f "$tmp"
echo "$diff"
check "--against: a kernel with fewer HGMMA" 'echo "$diff" | grep -qx "alpha_kernel: 2 -> 1 HGMMA"'
check "--against: a kernel that lost them all" 'echo "$diff" | grep -qx "delta_kernel_straight_line: 1 -> - HGMMA"'
check "--against: the count last" '[ "$(echo "$diff" | tail -1)" = "HGMMA differs from the reference in 2 of 3 kernels" ]'
grep -v HGMMA "$fixture" | "$py" "$tool" --against /dev/null >/dev/null 2>&1
check "--against, no wgmma in either: exit 1" '[ $? -eq 1 ]'
exit $fail
