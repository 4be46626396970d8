#!/bin/sh
# update.sh [FUSEGEN] - regenerates the golden trees from the current generator and templates:
#   tests/golden/emit/expected/  from tests/golden/emit/small.json (less the family headers)
#   generated/                   from specs/default.json
#   tests/golden/tuning/expected/golden_small_dispatch.c  from the small spec with the tuning
#                                files of tests/golden/tuning/ (compiled-in winners)
# FUSEGEN defaults to build/fusegen. Runs from the repository root with relative paths, as the
# tests do. Review the result with `git diff` before committing it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
fusegen=${1:-$root/build/fusegen}
case $fusegen in /*) ;; *) fusegen=$(pwd)/$fusegen ;; esac
if [ ! -x "$fusegen" ]; then
    echo "update.sh: no fusegen at $fusegen (build it, or pass its path)" >&2
    exit 2
fi
cd "$root"

# regen SPEC DEST: generate into a fresh folder, then put it in place of DEST.
regen() {
    tmp=$(mktemp -d "$root/.fusegen-update-XXXXXX")
    if ! "$fusegen" generate "$1" -o "$tmp" --templates templates; then
        rm -rf "$tmp"
        echo "update.sh: generating $1 failed; $2 left as it was" >&2
        exit 1
    fi
    chmod 755 "$tmp"
    rm -rf "$2"
    mv "$tmp" "$2"
    echo "update.sh: $2 <- $1 ($(find "$2" -type f | wc -l | tr -d ' ') files)"
}

regen tests/golden/emit/small.json tests/golden/emit/expected
# the small spec's golden tree holds what the generator decides: its test compares the family
# headers with templates/common/ itself (compare.cmake, FAMILY_FROM_TEMPLATES)
rm -f tests/golden/emit/expected/*/fusegen_sm*.cuh
regen specs/default.json generated

# the small spec's table with compiled-in winners (cli_tuning, unit_tuned_table)
tmp=$(mktemp -d "$root/.fusegen-update-XXXXXX")
if ! "$fusegen" generate tests/golden/emit/small.json --tuning tests/golden/tuning/small_h200.json \
        --tuning tests/golden/tuning/small_h100.json -o "$tmp" --templates templates -q; then
    rm -rf "$tmp"
    echo "update.sh: generating the tuned table failed; tests/golden/tuning/expected left as it was" >&2
    exit 1
fi
mkdir -p tests/golden/tuning/expected
cp "$tmp/golden_small/golden_small_dispatch.c" tests/golden/tuning/expected/golden_small_dispatch.c
rm -rf "$tmp"
echo "update.sh: tests/golden/tuning/expected/golden_small_dispatch.c <- tests/golden/emit/small.json + tests/golden/tuning/*.json"
