#!/bin/sh
# Every limit of generator/spec.h (FG_SPEC_MAX_*), and the store and f32 limits of check.c: a spec just
# over it must fail with exit status 1 and a message naming the limit, located (FILE:LINE:COL)
# where a position applies; a spec right at it must pass. The specs are written here, at test
# time, so no multi-megabyte file lives in the tree.
#   limits.sh FUSEGEN
set -u
fusegen=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-limits.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0

# kernel NAME TILES EPILOGUE [ARCHS]: one kernel object
kernel() {
    printf '{"name": "%s", "arch": [%s], "a": "bf16", "b": "bf16", "out": "bf16", "accum": "f32",\n' \
        "$1" "${4:-\"sm_80\"}"
    printf ' "tiles": [%s],\n "epilogue": [%s]}' "$2" "$3"
}
tile='{"m": 64, "n": 64, "k": 32, "stages": 2}'

# spec FILE LIBRARY KERNEL_OBJECTS...: writes a spec with those kernels
spec() {
    file=$1 lib=$2
    shift 2
    {
        printf '{\n"library": "%s",\n"kernels": [\n' "$lib"
        sep=''
        for k in "$@"; do
            printf '%s%s' "$sep" "$k"
            sep=$(printf ',\n')
        done
        printf '\n]\n}\n'
    } >"$file"
}

# repeat N TEXT SEP: TEXT N times, separated by SEP
repeat() {
    awk -v n="$1" -v t="$2" -v s="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%s%s", (i ? s : ""), t }'
}

# expect CASE STATUS PATTERN FILE: runs `fusegen check FILE`, wants STATUS and (when PATTERN is
# not empty) a line of stderr matching the extended regex PATTERN
expect() {
    "$fusegen" check "$4" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne "$2" ]; then
        echo "FAIL: $1: exit status $rc, expected $2"
        head -n 5 "$tmp/err"
        fails=$((fails + 1))
        return
    fi
    if [ -n "$3" ] && ! grep -Eq -- "$3" "$tmp/err"; then
        echo "FAIL: $1: no line matching '$3' in:"
        head -n 5 "$tmp/err"
        fails=$((fails + 1))
        return
    fi
    echo "ok: $1"
}

# ---- file size: FG_SPEC_MAX_BYTES = 4 MiB ---------------------------------------------------
spec "$tmp/size_at.json" lib "$(kernel k "$tile" '{"op": "relu"}')"
cp "$tmp/size_at.json" "$tmp/size_over.json"
pad=$((4194304 - $(wc -c <"$tmp/size_at.json")))
head -c "$pad" /dev/zero | tr '\0' ' ' >>"$tmp/size_at.json"
head -c $((5 * 1000 * 1000)) /dev/zero | tr '\0' ' ' >>"$tmp/size_over.json"
expect "file of 4 MiB" 0 "" "$tmp/size_at.json"
expect "file of 5 MB" 1 "^$tmp/size_over.json: error: .*limit of 4194304 bytes" "$tmp/size_over.json"
# through a pipe, where no size can be trusted in advance
if [ -e /dev/stdin ]; then
    "$fusegen" check /dev/stdin <"$tmp/size_over.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "4194304" "$tmp/err"; then echo "ok: 5 MB through a pipe"
    else echo "FAIL: 5 MB through a pipe: exit status $rc"; head -n 5 "$tmp/err"; fails=$((fails + 1)); fi
fi

# ---- nesting: FG_SPEC_MAX_DEPTH = 32 --------------------------------------------------------
# 32 levels in all (the top-level object is one) is allowed, the 33rd is not; the error is
# reported at the bracket that opens it.
printf '{"library": %s1%s}\n' "$(repeat 31 '[' '')" "$(repeat 31 ']' '')" >"$tmp/depth_at.json"
printf '{"library": %s1%s}\n' "$(repeat 32 '[' '')" "$(repeat 32 ']' '')" >"$tmp/depth_over.json"
printf '{"library": %s1%s}\n' "$(repeat 39 '[' '')" "$(repeat 39 ']' '')" >"$tmp/depth_40.json"
printf '%s\n' "$(repeat 100000 '[' '')" >"$tmp/depth_100000.json"
expect "nesting of 32" 1 "" "$tmp/depth_at.json"
if grep -q "nesting" "$tmp/err"; then echo "FAIL: nesting of 32 reported as too deep"; fails=$((fails + 1)); fi
expect "nesting of 33" 1 ":1:44: error: nesting deeper than 32 levels" "$tmp/depth_over.json"
expect "nesting of 40" 1 ":1:44: error: nesting deeper than 32 levels" "$tmp/depth_40.json"
expect "nesting of 100000" 1 ":1:33: error: nesting deeper than 32 levels" "$tmp/depth_100000.json"

# ---- kernels: FG_SPEC_MAX_KERNELS = 256 -----------------------------------------------------
# kernels N FILE: a valid spec of N kernels
kernels() {
    awk -v n="$1" -v t="$tile" 'BEGIN {
        printf "{\n\"library\": \"lib\",\n\"kernels\": [\n"
        for (i = 0; i < n; i++)
            printf "%s{\"name\": \"k%d\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", \"accum\": \"f32\", \"tiles\": [%s], \"epilogue\": [{\"op\": \"bias\"}]}", (i ? ",\n" : ""), i, t
        printf "\n]\n}\n"
    }' >"$2"
}
kernels 256 "$tmp/kernels_at.json"
kernels 300 "$tmp/kernels_over.json"
expect "256 kernels" 0 "" "$tmp/kernels_at.json"
expect "300 kernels" 1 ":3:12: error: /kernels: too many kernels: 300 \(at most 256\)" "$tmp/kernels_over.json"

# ---- tiles per GEMM: FG_SPEC_MAX_TILES = 16 -------------------------------------------------
# 16 distinct small tiles: m, n in {32, 64}, k 32, stages 2..5
tiles16=$(for m in 32 64; do for n in 32 64; do for s in 2 3 4 5; do
    printf '{"m": %d, "n": %d, "k": 32, "stages": %d},' "$m" "$n" "$s"; done; done; done)
tiles16=${tiles16%,}
tiles20="$tiles16,$(repeat 4 "$tile" ',')"
spec "$tmp/tiles_at.json" lib "$(kernel k "$tiles16" '{"op": "relu"}')"
spec "$tmp/tiles_over.json" lib "$(kernel k "$tiles20" '{"op": "relu"}')"
expect "16 tiles" 0 "" "$tmp/tiles_at.json"
expect "20 tiles" 1 ":5:11: error: /kernels/0/tiles: too many tiles: 20 \(at most 16\)" "$tmp/tiles_over.json"
spec "$tmp/tiles_then_over.json" lib "$(kernel k "$tile" '{"op": "relu"}' | sed '$ s/}$//'),
 \"then\": {\"tiles\": [$tiles20], \"epilogue\": []}}"
expect "20 tiles in then" 1 "error: /kernels/0/then/tiles: too many tiles: 20 \(at most 16\)" "$tmp/tiles_then_over.json"

# ---- ops per epilogue: FG_SPEC_MAX_OPS = 32 -------------------------------------------------
spec "$tmp/ops_at.json" lib "$(kernel k "$tile" "$(repeat 32 '{"op": "relu"}' ', ')")"
spec "$tmp/ops_over.json" lib "$(kernel k "$tile" "$(repeat 40 '{"op": "relu"}' ', ')")"
expect "32 ops" 0 "" "$tmp/ops_at.json"
expect "40 ops" 1 ":6:14: error: /kernels/0/epilogue: too many ops: 40 \(at most 32\)" "$tmp/ops_over.json"

# ---- archs per kernel: FG_SPEC_MAX_ARCHS = 8 ------------------------------------------------
spec "$tmp/archs_over.json" lib "$(kernel k "$tile" '{"op": "relu"}' "$(repeat 9 '"sm_80"' ', ')")"
expect "9 archs" 1 ":4:23: error: /kernels/0/arch: too many archs: 9 \(at most 8\)" "$tmp/archs_over.json"

# ---- names: FG_SPEC_MAX_NAME = 64 -----------------------------------------------------------
n64=$(repeat 64 x '')
n100=$(repeat 100 x '')
spec "$tmp/name_at.json" "$n64" "$(kernel "$n64" "$tile" "{\"op\": \"store\", \"as\": \"$n64\"}")"
expect "names of 64 characters" 0 "" "$tmp/name_at.json"
spec "$tmp/name_kernel.json" lib "$(kernel "$n100" "$tile" '{"op": "relu"}')"
expect "kernel name of 100 characters" 1 \
    ":4:10: error: /kernels/0/name: .*100 characters long, more than 64" "$tmp/name_kernel.json"
spec "$tmp/name_library.json" "$n100" "$(kernel k "$tile" '{"op": "relu"}')"
expect "library name of 100 characters" 1 \
    ":2:12: error: /library: .*100 characters long, more than 64" "$tmp/name_library.json"
spec "$tmp/name_store.json" lib "$(kernel k "$tile" "{\"op\": \"store\", \"as\": \"$n100\"}")"
expect "store name of 100 characters" 1 \
    "error: /kernels/0/epilogue/0/as: .*100 characters long, more than 64" "$tmp/name_store.json"

# ---- stores per epilogue (check.c): 4 -------------------------------------------------------
# stores N: N store ops named s0, s1, ...
stores() {
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s{\"op\": \"store\", \"as\": \"s%d\"}", (i ? ", " : ""), i }'
}
spec "$tmp/stores_at.json" lib "$(kernel k "$tile" "$(stores 4)")"
spec "$tmp/stores_over.json" lib "$(kernel k "$tile" "$(stores 5)")"
expect "4 stores" 0 "" "$tmp/stores_at.json"
expect "5 stores" 1 "error: /kernels/0/epilogue/4: more than 4 store ops in one epilogue" "$tmp/stores_over.json"

# ---- f32 constants (check.c): a nonzero alpha or beta of at least FLT_MIN -------------------
# (issue 37: 1e-300 passed check, nvcc compiled 0 and NVRTC failed). FLT_MIN itself passes; the
# double just below it fails, and the message prints the limit and the value apart.
spec "$tmp/alpha_at.json" lib "$(kernel k "$tile" '{"op": "scale", "alpha": 1.1754943508222875e-38}, {"op": "residual", "beta": -1.1754943508222875e-38}, {"op": "scale", "alpha": 0}')"
spec "$tmp/alpha_under.json" lib "$(kernel k "$tile" '{"op": "scale", "alpha": 1.1754943508222874e-38}')"
spec "$tmp/beta_tiny.json" lib "$(kernel k "$tile" '{"op": "residual", "beta": -1e-300}')"
expect "alpha and beta of FLT_MIN, alpha 0" 0 "" "$tmp/alpha_at.json"
expect "alpha just under FLT_MIN" 1 \
    ":[0-9]+:[0-9]+: error: /kernels/0/epilogue/0/alpha: .*at least FLT_MIN, 1.1754943508222875e-38 .*found 1.1754943508222874e-38$" \
    "$tmp/alpha_under.json"
expect "beta of -1e-300" 1 "error: /kernels/0/epilogue/0/beta: .*at least FLT_MIN, .*found -1e-300$" "$tmp/beta_tiny.json"

echo "limits: $fails failed"
[ "$fails" -eq 0 ]
