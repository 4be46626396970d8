#!/usr/bin/env bash
# A/B benchmark of two versions in one GPU session: fusegen-bench runs alternating A B A B ...,
# then bench/ab_compare.py (medians, B/A, B/A against each run's own cuBLASLt time, spreads).
# A single pair of runs is not enough: the device's speed drifts by a few percent between runs.
#   scripts/ab-bench.sh --prepare REF_A REF_B
#       here (a git checkout): the two refs' files into ab/a and ab/b (git-ignored), to carry
#       to the GPU machine.
#   scripts/ab-bench.sh [--rounds N] [--reps R] [-- FUSEGEN_BENCH_ARGS...]
#       on the GPU machine: builds ab/a and ab/b (sm_90a), runs N rounds (default 2) of
#       fusegen-bench --reps R (default 50) on each, writes logs and CSVs under $OUT (default
#       ./ab-out) and prints the comparison last. FUSEGEN_AB_TEST=SUBSTRING: first run B's
#       fusegen_test_kernels on the kernels whose names contain SUBSTRING (a wrong B is not timed).
set -uo pipefail
cd "$(dirname "$0")/.."
die() { echo "ab-bench.sh: $*" >&2; exit 2; }

if [ "${1:-}" = --prepare ]; then
  [ $# -eq 3 ] || die "usage: scripts/ab-bench.sh --prepare REF_A REF_B"
  command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1 || die "--prepare needs a git checkout"
  for ref in "$2" "$3"; do
    git rev-parse --verify --quiet "$ref^{commit}" >/dev/null || die "unknown ref '$ref'"
  done
  for side in a:"$2" b:"$3"; do
    dir=ab/${side%%:*} ref=${side#*:}
    rm -rf "$dir" && mkdir -p "$dir" && git archive "$ref" | tar -x -C "$dir" || die "cannot unpack $ref into $dir"
    echo "$dir: $ref ($(git rev-parse --short "$ref"))" | tee "$dir/AB_REF"
  done
  exit 0
fi

rounds=2 reps=50
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) [ $# -ge 2 ] || die "--rounds needs a number"; rounds=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps=$2; shift 2 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (see the comment at the top of this script)" ;;
  esac
done
case $rounds$reps in *[!0-9]*) die "--rounds and --reps take whole numbers" ;; esac
[ "$rounds" -ge 1 ] && [ "$reps" -ge 1 ] || die "--rounds and --reps must be at least 1"
[ -d ab/a ] && [ -d ab/b ] || die "ab/a and ab/b are missing: run 'scripts/ab-bench.sh --prepare REF_A REF_B' first and carry ab"
[ -f .device-deps/env.sh ] && . .device-deps/env.sh
out=${OUT:-$PWD/ab-out}
mkdir -p "$out"
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
jobs=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
targets=(--target fusegen-bench)
[ -n "${FUSEGEN_AB_TEST:-}" ] && targets+=(--target fusegen_test_kernels)

build() {
  cmake -S "ab/$1" -B "ab/$1/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFUSEGEN_CUDA_ARCHITECTURES=90a-real \
    >"$out/build-$1.log" 2>&1 && cmake --build "ab/$1/build" -j "$jobs" "${targets[@]}" >>"$out/build-$1.log" 2>&1
}
build a & pa=$!
build b & pb=$!
wait $pa || { tail -20 "$out/build-a.log"; die "building ab/a failed ($out/build-a.log)"; }
wait $pb || { tail -20 "$out/build-b.log"; die "building ab/b failed ($out/build-b.log)"; }

if [ -n "${FUSEGEN_AB_TEST:-}" ]; then
  FUSEGEN_TEST_ONLY=$FUSEGEN_AB_TEST ab/b/build/tests/gpu/fusegen_test_kernels >"$out/test-b.log" 2>&1 ||
    { tail -20 "$out/test-b.log"; die "B's kernel test failed ($out/test-b.log): not timed"; }
  grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/test-b.log"
fi

for r in $(seq 1 "$rounds"); do
  for side in a b; do
    ab/$side/build/bench/fusegen-bench --reps "$reps" --csv "$out/$side-$r.csv" "$@" >"$out/$side-$r.log" 2>&1
    echo "round $r $side: rc=$? ($(cat ab/$side/AB_REF 2>/dev/null || echo "ab/$side"))"
  done
done
ls "$out"/a-*.csv "$out"/b-*.csv >/dev/null 2>&1 || die "a side wrote no CSV (see $out/*.log)"
python3 bench/ab_compare.py "$out"/a-*.csv -- "$out"/b-*.csv | tee "$out/compare.txt"
