#!/bin/sh
# fusegen check --nvrtc: a good spec compiles (exit 0, one "ok" line per kernel file and arch);
# a kernel template broken on purpose fails (exit 1) with NVRTC's message naming the generated
# file, and nothing is written; a register spill in the spill table is refused at its tile, one
# not in it fails the compile (with its measured row); Hopper f16-out split norms compile;
# --nvrtc-ptx fails on the broken template too.
# (The benchmark's specs: nvrtc_bench_specs.sh, a test of its own so that the two run side by side.)
#   nvrtc_test.sh FUSEGEN SOURCE_DIR
set -u
fusegen=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
cd "$src" || exit 1

"$fusegen" check --nvrtc tests/golden/emit/small.json >"$tmp/out" 2>"$tmp/err"
rc=$?
oks=$(grep -c '^ok ' "$tmp/out")
if [ $rc -ne 0 ] || [ "$oks" -ne 2 ]; then
    echo "FAIL good spec: rc=$rc, $oks ok lines"; cat "$tmp/out" "$tmp/err"; fail=1
else
    echo "PASS good spec compiles with NVRTC ($oks files x archs)"
fi

cp -R templates "$tmp/templates"
printf '\nthis is not C++;\n' >>"$tmp/templates/kernels/kernel.cu.tmpl"
"$fusegen" check --nvrtc --templates "$tmp/templates" tests/golden/emit/small.json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'golden_small_proj_bias_residual_layernorm.cu([0-9]*): error' "$tmp/err"; then
    echo "FAIL broken template: rc=$rc"; cat "$tmp/out" "$tmp/err"; fail=1
else
    echo "PASS broken template: exit 1, NVRTC error located in the generated file"
fi

# --nvrtc-ptx (the benchmark's specs): front-end errors still fail; the two options exclude each other
"$fusegen" check --nvrtc-ptx --templates "$tmp/templates" tests/golden/emit/small.json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'golden_small_proj_bias_residual_layernorm.cu([0-9]*): error' "$tmp/err"; then
    echo "FAIL broken template, --nvrtc-ptx: rc=$rc"; cat "$tmp/out" "$tmp/err"; fail=1
else
    echo "PASS broken template, --nvrtc-ptx: exit 1, the error located"
fi
"$fusegen" check --nvrtc --nvrtc-ptx tests/golden/emit/small.json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 2 ] || ! grep -q "give one, once" "$tmp/err"; then
    echo "FAIL --nvrtc with --nvrtc-ptx: rc=$rc"; cat "$tmp/err"; fail=1
else
    echo "PASS --nvrtc with --nvrtc-ptx: a usage error"
fi

"$fusegen" generate --nvrtc tests/golden/emit/small.json -o "$tmp/never" >/dev/null 2>&1
rc=$?
if [ $rc -ne 2 ] || [ -e "$tmp/never" ]; then
    echo "FAIL --nvrtc with generate: rc=$rc"; fail=1
else
    echo "PASS --nvrtc applies only to check"
fi

# A spec whose kernel spills (a store op as a 128x256 Hopper kernel's only op: 528 bytes with
# NVRTC 13.0, a wide margin). It is in the spill table (generator/spills.def), so check refuses
# it at the tile before compiling anything; with the table ignored (as for a spill the table does
# not know) check --nvrtc fails on it, naming the spill and printing the table row it measured.
"$fusegen" check --nvrtc tests/cli/specs/spills-store-only.json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "/kernels/0/tiles/0: this tile with epilogue 'store' spills 528 bytes" "$tmp/err" ||
   grep -q '^FAIL\|^ok' "$tmp/out"; then
    echo "FAIL a spill in the table: rc=$rc"; cat "$tmp/out" "$tmp/err"; fail=1
else
    echo "PASS a spill in the table is refused at its tile, before compiling"
fi
FUSEGEN_SPILL_TABLE=ignore "$fusegen" check --nvrtc tests/cli/specs/spills-store-only.json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'Registers are spilled' "$tmp/err" || ! grep -q '^FAIL sm_90a' "$tmp/out" ||
   ! grep -q '^spill sm_90a  store_only_sm90a_128x256x64_s3 FG_SPILL("sm_90a", "sm90a", 128, 256, 64, 3, "cooperative", "none", "bf16", "bf16", "bf16", "nk", "store", 528)$' "$tmp/out"; then
    echo "FAIL a spilling kernel: rc=$rc"; cat "$tmp/out" "$tmp/err"; fail=1
else
    echo "PASS a spill fails check --nvrtc, with its measured row"
fi

# Hopper tiles with f16 out and bias before a layernorm or rmsnorm, split and auto (issue 37,
# item 2): the split variants staged the bias without the tile buffer and failed the
# template's "staging needs the tile buffer" assertion. Every variant compiles.
"$fusegen" check --nvrtc tests/cli/specs/hopper-f16-split-norm.json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ] || grep -v '^fusegen: ' "$tmp/out" | grep -q -v '^ok '; then
    echo "FAIL Hopper f16 out with bias and a split norm: rc=$rc"; cat "$tmp/out" "$tmp/err"; fail=1
else
    echo "PASS Hopper f16 out with bias and a split norm compiles"
fi

if [ $fail -eq 0 ]; then echo "all passed"; else echo "some failed"; fi
exit $fail
