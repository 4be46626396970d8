#!/bin/sh
# symbols_test.sh FUSEGEN NVCC - two libraries, each with a spec kernel `proj` (different
# epilogue constants), compiled into objects: no symbol that names the kernel may be defined in
# both. Before the variant namespaces carried the library's name, template instantiations such as
# fusegen_sm90::make_epilogue_maps<proj_sm90a_...::Epilogue1> were weak symbols of both objects
# with different bodies, and a program linking both libraries ran one library's with the other's.
set -u
FUSEGEN=$1
NVCC=$2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-symbols-XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
for lib in liba libb; do
    alpha=0.5
    [ "$lib" = libb ] && alpha=2.0
    cat >"$TMP/$lib.json" <<JSON
{"library": "$lib", "kernels": [
 {"name": "proj", "arch": ["sm_90a", "sm_80"], "a": "bf16", "b": "bf16", "out": "bf16",
  "tiles": [{"m": 128, "n": 128, "k": 64, "stages": 4}],
  "epilogue": [{"op": "scale", "alpha": $alpha}, {"op": "bias"}]}]}
JSON
    "$FUSEGEN" generate -q "$TMP/$lib.json" -o "$TMP/gen" || { echo "FAIL: generate $lib" >&2; exit 1; }
    "$NVCC" -std=c++17 -O1 --generate-code=arch=compute_90a,code=sm_90a -I"$TMP/gen/$lib" -I"$(dirname "$0")/../../runtime" \
        -c "$TMP/gen/$lib/${lib}_proj.cu" -o "$TMP/$lib.o" 2>"$TMP/$lib.err" ||
        { echo "FAIL: nvcc $lib:" >&2; cat "$TMP/$lib.err" >&2; exit 1; }
    # defined symbols (any binding), demangled
    nm -C --defined-only "$TMP/$lib.o" | sed 's/^[0-9a-f]* [A-Za-z] //' | sort -u >"$TMP/$lib.syms"
done
comm -12 "$TMP/liba.syms" "$TMP/libb.syms" | grep 'proj' >"$TMP/shared" || true
n=$(grep -c . "$TMP/liba.syms")
if [ -s "$TMP/shared" ]; then
    echo "FAIL: symbols naming the kernel defined by both libraries:" >&2
    sed 's/^/  | /' "$TMP/shared" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
# the test can fail: each object does define symbols that name the kernel
if ! grep -q 'proj' "$TMP/liba.syms"; then
    echo "FAIL: liba.o defines no symbol naming the kernel ($n symbols)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
echo "1 passed, 0 failed"
