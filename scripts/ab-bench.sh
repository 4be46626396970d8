#!/usr/bin/env bash
# A/B benchmark of two or more versions in one GPU run: fusegen-bench runs alternating
# A B A B ... (A B C A B C ... for three), then bench/ab_compare.py (medians, B/A, B/A against
# each run's own cuBLASLt time, spreads; every version after A compared with A).
# A single pair of runs is not enough: the device's speed drifts by a few percent between runs.
#   scripts/ab-bench.sh --prepare REF_A REF_B [REF_C ...]
#       here (a git checkout): the refs' files into ab/a, ab/b, ... (git-ignored), to carry to
#       the GPU machine.
#   scripts/ab-bench.sh --tune-example [--rounds N]
#       the same for the example library of specs/examples/llama_block.json: each round runs
#       fusegen-tune --library over bench/tune-shapes-llama.json on every version (a fresh tuning
#       file each), then bench/ab_tune_compare.py --bare linear (winner times, B/A, and each
#       fused kernel over the bare GEMM of its shape); FUSEGEN_AB_TEST runs
#       fusegen_test_kernels_llama instead.
#   scripts/ab-bench.sh [--rounds N] [--reps R] [-- FUSEGEN_BENCH_ARGS...]
#       on the GPU machine: builds every ab/<letter> (sm_90a), runs N rounds (default 2) of
#       fusegen-bench --reps R (default 50) on each, prints the comparison last and leaves under
#       $OUT (default ./ab-out) compare.txt, compare-plain.txt (the same for fusegen's plain GEMM)
#       and ab-logs.tar.gz (builds, runs, CSVs: the device tool brings back 8 files at most).
#       FUSEGEN_AB_TEST=SUBSTRING: first run each version
#       after A through fusegen_test_kernels on the kernels whose names contain SUBSTRING (a
#       wrong version is not timed). FUSEGEN_AB_TIMEOUT (seconds, default 240): the limit on
#       each test and benchmark run, so a hung kernel costs minutes, not the whole call. With
#       cuobjdump on the machine, each version's HGMMA count per kernel is compared with A's
#       first (hgmma-<letter>.txt): a floor that lost wgmmas shows there.
set -uo pipefail
cd "$(dirname "$0")/.."
die() { echo "ab-bench.sh: $*" >&2; exit 2; }

if [ "${1:-}" = --prepare ]; then
  shift
  [ $# -ge 2 ] && [ $# -le 6 ] || die "usage: scripts/ab-bench.sh --prepare REF_A REF_B [REF_C ...] (2 to 6 refs)"
  command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1 || die "--prepare needs a git checkout"
  for ref in "$@"; do
    git rev-parse --verify --quiet "$ref^{commit}" >/dev/null || die "unknown ref '$ref'"
  done
  rm -rf ab
  letters=(a b c d e f) i=0
  for ref in "$@"; do
    dir=ab/${letters[$i]} i=$((i + 1))
    mkdir -p "$dir" && git archive "$ref" | tar -x -C "$dir" || die "cannot unpack $ref into $dir"
    echo "$dir: $ref ($(git rev-parse --short "$ref"))" | tee "$dir/AB_REF"
  done
  exit 0
fi

rounds=2 reps=50 tune_example=0
while [ $# -gt 0 ]; do
  case $1 in
    --tune-example) tune_example=1; shift ;;
    --rounds) [ $# -ge 2 ] || die "--rounds needs a number"; rounds=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps=$2; shift 2 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (see the comment at the top of this script)" ;;
  esac
done
limit=${FUSEGEN_AB_TIMEOUT:-240}
case $rounds$reps$limit in *[!0-9]*) die "--rounds, --reps and FUSEGEN_AB_TIMEOUT take whole numbers" ;; esac
[ "$rounds" -ge 1 ] && [ "$reps" -ge 1 ] || die "--rounds and --reps must be at least 1"
sides=()
for side in a b c d e f; do [ -d "ab/$side" ] && sides+=("$side"); done
[ ${#sides[@]} -ge 2 ] && [ "${sides[0]}" = a ] && [ "${sides[1]}" = b ] ||
  die "ab/a and ab/b are missing: run 'scripts/ab-bench.sh --prepare REF_A REF_B' first and carry ab"
[ -f .device-deps/env.sh ] && . .device-deps/env.sh
out=${OUT:-$PWD/ab-out}
logs=$out/ab-logs
mkdir -p "$logs"
# Bundles the logs into one file (the device tool brings back 8 files at most), on every exit.
bundle() { tar -czf "$out/ab-logs.tar.gz" -C "$out" ab-logs 2>/dev/null && rm -rf "$logs"; }
trap bundle EXIT
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
jobs=$(( $(nproc) / ${#sides[@]} > 0 ? $(nproc) / ${#sides[@]} : 1 ))
targets=(--target fusegen-bench)
test_bin=fusegen_test_kernels sass_lib=libfusegen_default.a
if [ $tune_example = 1 ]; then
  targets=(--target fusegen-tune --target fusegen_llama_block_shared)
  test_bin=fusegen_test_kernels_llama sass_lib=libllama_block.so
fi
[ -n "${FUSEGEN_AB_TEST:-}" ] && targets+=(--target "$test_bin")

build() {
  cmake -S "ab/$1" -B "ab/$1/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFUSEGEN_CUDA_ARCHITECTURES=90a-real \
    >"$logs/build-$1.log" 2>&1 && cmake --build "ab/$1/build" -j "$jobs" "${targets[@]}" >>"$logs/build-$1.log" 2>&1
}
pids=()
for side in "${sides[@]}"; do build "$side" & pids+=($!); done
for i in "${!sides[@]}"; do
  wait "${pids[$i]}" || { tail -20 "$logs/build-${sides[$i]}.log"; die "building ab/${sides[$i]} failed (build-${sides[$i]}.log in ab-logs.tar.gz)"; }
done

if [ -n "${FUSEGEN_AB_TEST:-}" ]; then
  for side in "${sides[@]:1}"; do
    FUSEGEN_TEST_ONLY=$FUSEGEN_AB_TEST timeout "$limit" ab/$side/build/tests/gpu/$test_bin >"$logs/test-$side.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
      tail -20 "$logs/test-$side.log"
      [ $rc -eq 124 ] && echo "ab/$side's kernel test ran past FUSEGEN_AB_TIMEOUT ($limit s) and was stopped"
      die "ab/$side's kernel test failed (test-$side.log in ab-logs.tar.gz): not timed"
    fi
    echo "ab/$side: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/test-$side.log")"
  done
fi

# Each version's HGMMA per kernel against A's (cuobjdump, where the machine has it): a change or
# floor that leaves accumulators unread loses the wgmmas that fed them without any error
# (docs/decisions.md v85); the line says so before the times do.
if command -v cuobjdump >/dev/null 2>&1; then
  for side in "${sides[@]}"; do
    cuobjdump -sass "ab/$side/build/$sass_lib" >"$logs/sass-$side.txt" 2>&1 || echo "ab/$side: cuobjdump failed"
  done
  for side in "${sides[@]:1}"; do
    python3 bench/sass_kloop.py "$logs/sass-$side.txt" --against "$logs/sass-a.txt" >"$logs/hgmma-$side.txt" 2>&1
    echo "ab/$side: $(tail -1 "$logs/hgmma-$side.txt") (hgmma-$side.txt)"
  done
  rm -f "$logs"/sass-*.txt   # large; the comparison is kept
fi

if [ $tune_example = 1 ]; then
  groups=()
  for r in $(seq 1 "$rounds"); do
    for side in "${sides[@]}"; do
      timeout "$limit" ab/$side/build/bench/fusegen-tune --library "ab/$side/build/libllama_block.so" \
        --shapes bench/tune-shapes-llama.json -o "$logs/$side-$r.json" >"$logs/$side-$r.log" 2>&1
      echo "round $r $side: rc=$? $(tail -1 "$logs/$side-$r.log") ($(cat ab/$side/AB_REF 2>/dev/null || echo "ab/$side"))"
    done
  done
  for side in "${sides[@]}"; do
    ls "$logs/$side"-*.json >/dev/null 2>&1 || die "ab/$side wrote no tuning file (see its logs in ab-logs.tar.gz)"
    [ ${#groups[@]} -gt 0 ] && groups+=(--)
    groups+=("$logs/$side"-*.json)
  done
  python3 bench/ab_tune_compare.py --bare linear "${groups[@]}" | tee "$out/compare.txt"
  exit "${PIPESTATUS[0]}"
fi

for r in $(seq 1 "$rounds"); do
  for side in "${sides[@]}"; do
    timeout "$limit" ab/$side/build/bench/fusegen-bench --reps "$reps" --csv "$logs/$side-$r.csv" "$@" >"$logs/$side-$r.log" 2>&1
    rc=$?
    echo "round $r $side: rc=$rc$([ $rc -eq 124 ] && echo " (stopped after $limit s)") ($(cat ab/$side/AB_REF 2>/dev/null || echo "ab/$side"))"
  done
done
groups=()
for side in "${sides[@]}"; do
  ls "$logs/$side"-*.csv >/dev/null 2>&1 || die "ab/$side wrote no CSV (see its logs in ab-logs.tar.gz)"
  [ ${#groups[@]} -gt 0 ] && groups+=(--)
  groups+=("$logs/$side"-*.csv)
done
python3 bench/ab_compare.py "${groups[@]}" | tee "$out/compare.txt"
# fusegen's plain GEMM (proj) beside each problem, compared the same way: its summary line here
python3 bench/ab_compare.py --plain "${groups[@]}" >"$out/compare-plain.txt" 2>&1 &&
  echo "plain GEMM: $(grep '^geometric mean' "$out/compare-plain.txt" | tr -s ' ' | tr '\n' ';') (compare-plain.txt)"
