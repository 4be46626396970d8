#!/usr/bin/env bash
# On a GPU machine, in one go: build, run the CPU and GPU tests, the sanitizers and the benchmark.
# Logs go under $OUT (default: ./gpu-out; all but summary.txt and bench.* bundled into
# gpu-logs.tar.gz at the end); a short table is printed last. The benchmark runs bench/shapes.json,
# then bench/shapes-unseen.json (bench-unseen.*, in the bundle) and bench/shapes-decode.json with
# the weights read from DRAM (bench-decode.*, in the bundle). Environment:
# FUSEGEN_SKIP_CPU_TESTS=1 (the CPU tests but those that need the kernel library: the PyTorch
# bindings' layout and table); FUSEGEN_CTEST_GPU_EXCLUDE (a ctest regex of GPU tests to leave out, e.g.
# pytorch_ops); FUSEGEN_SANITIZE_TOOLS (default "memcheck racecheck synccheck") and
# FUSEGEN_SANITIZE_TIMEOUT (seconds a tool, default 150) and FUSEGEN_SANITIZE_ONLY (a kernel-name
# substring: the sanitizers run the kernel test on those kernels only); FUSEGEN_BENCH_ARGS (the benchmark's
# options); FUSEGEN_BENCH_SPECS (spec files benchmarked through the JIT, every variant) and
# FUSEGEN_SPEC_BENCH_ARGS (their options, default --quick); FUSEGEN_TORCH_COMPARE=1 with
# FUSEGEN_TORCH_COMPARE_ARGS and FUSEGEN_TORCH_COMPARE_TIMEOUT (then bench/torch_host_time.py too);
# FUSEGEN_TORCH_REQUIRE_FAST (default 1: the PyTorch tests fail unless the ops' C++ path is in use);
# with FUSEGEN_TORCH_COMPARE=1 also bench/llama_block.py --block (llama_block.*);
# FUSEGEN_ALL_VARIANTS=1: every variant timed on both shapes files, the decode set (weights from
# DRAM) and bench/shapes-offsector.json, and the selected one (and the model's first, without
# tuning) against the fastest, fused and plain (select-vs-best.txt);
# FUSEGEN_TUNE=1: fusegen-tune over bench/tune-shapes.json and bench/shapes.json into this GPU's
# shipped tuning file, the library rebuilt with it before the benchmark; it comes back as
# tuning.json (kept out of the bundle; FUSEGEN_TUNE_TIMEOUT seconds a shapes file, default 420:
# an interrupted run keeps what it measured; FUSEGEN_TUNE_FRESH=1: everything measured again, not
# resumed from the shipped file, as after a change of the kernels); the example library of
# specs/examples/llama_block.json likewise (fusegen-tune --library over
# bench/tune-shapes-llama.json into specs/examples/tuning/llama_block.<gpu>.json), back as
# tuning-llama.json, unless FUSEGEN_TUNE_EXAMPLE=0;
# --tune-only: the build, fusegen_test_kernels and FUSEGEN_TUNE's tuning, nothing else (a call
# with a time limit that the whole run would not fit).
#   scripts/gpu-check.sh [--no-bench] [--no-sanitize] [--tune-only]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
# On exit, every log but summary.txt and the benchmark's bench.log/.csv/.json goes into one
# archive, gpu-logs.tar.gz: the device tool brings back 8 files at most.
bundle() {
  (cd "$out" && ls | grep -Ev '^(summary\.txt|bench\.(log|csv|json)|tuning(-llama)?\.json|select-vs-best\.txt|gpu-logs\.tar\.gz)$' >.bundle-list &&
     [ -s .bundle-list ] && tar -czf gpu-logs.tar.gz -T .bundle-list && xargs rm -rf <.bundle-list
   rm -f .bundle-list)
}
trap bundle EXIT
bench=1 sanitize=1 tune_only=0
for a in "$@"; do
  case $a in
    --no-bench) bench=0 ;; --no-sanitize) sanitize=0 ;;
    --tune-only) tune_only=1 sanitize=0 FUSEGEN_TUNE=1 ;;
    *) echo "gpu-check.sh: unknown option $a (see the comment at the top)" >&2; exit 2 ;;
  esac
done
[ -f .device-deps/env.sh ] && . .device-deps/env.sh
build=build-gpu
# The PyTorch ops' C++ path is built on first use (torch.utils.cpp_extension), here into the
# build folder; the tests require it to be in use, so a build failure shows as a failed test.
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$PWD/$build/torch-extensions}
export FUSEGEN_TORCH_REQUIRE_FAST=${FUSEGEN_TORCH_REQUIRE_FAST:-1}
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
status() { printf '%-28s %s\n' "$1" "$2" >>"$out/summary.txt"; }
: >"$out/summary.txt"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; date -u; } >"$out/machine.txt" 2>&1

if cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFUSEGEN_CUDA_ARCHITECTURES=90a-real >"$out/build.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1; then
  status build ok
else
  status build FAILED; tail -40 "$out/build.log"; cat "$out/summary.txt"; exit 1
fi

# HGMMA in the SASS means the Hopper family really uses wgmma; spills would show in build.log.
# The k tile loop's length (sass-kloop.txt, a line a kernel) is tensor-idle time when it grows.
if command -v cuobjdump >/dev/null 2>&1; then
  cuobjdump -sass "$build/libfusegen_default.a" >"$out/sass.txt" 2>/dev/null
  status "HGMMA in SASS" "$(grep -c HGMMA "$out/sass.txt") instructions"
  python3 bench/sass_kloop.py "$out/sass.txt" >"$out/sass-kloop.txt" 2>&1
  status "k tile loop (SASS)" "$(python3 bench/sass_kloop.py "$out/sass.txt" --summary 2>&1)"
  rm -f "$out/sass.txt"
fi
# Clusters of 2-16 CTAs a Hopper GEMM's footprint gets at once (the cluster kernels' grid)
if [ -x "$build/bench/fusegen-cluster-occupancy" ]; then
  "$build/bench/fusegen-cluster-occupancy" >"$out/cluster-occupancy.txt" 2>&1
  status "clusters of 8 / 16 at once" "$(awk '$1 == 8 || $1 == 16 {printf "%s ", $2}' "$out/cluster-occupancy.txt")"
fi
if [ $tune_only = 1 ]; then
  :
elif [ "${FUSEGEN_SKIP_CPU_TESTS:-0}" != 1 ]; then
  (cd "$build" && ctest --output-on-failure -j 8 -LE gpu) >"$out/ctest-cpu.log" 2>&1
  status "ctest (cpu)" "$(grep -E 'tests passed|tests failed' "$out/ctest-cpu.log" | tail -1)"
else
  # the CPU tests that need the kernel library, which only a build with kernels has
  (cd "$build" && ctest --output-on-failure -L pytorch -LE gpu) >"$out/ctest-cpu.log" 2>&1
  status "ctest (cpu, kernel library)" "$(grep -E 'tests passed|tests failed' "$out/ctest-cpu.log" | tail -1)"
fi
# gpu_kernels and gpu_numerics run once, below, with their full reports (ctest keeps only
# failing output); FUSEGEN_CTEST_GPU_EXCLUDE (a ctest regex) leaves out more.
if [ $tune_only = 0 ]; then
  (cd "$build" && ctest --output-on-failure --timeout 300 -L gpu \
     -E "^(gpu_kernels|gpu_numerics)\$${FUSEGEN_CTEST_GPU_EXCLUDE:+|$FUSEGEN_CTEST_GPU_EXCLUDE}") >"$out/ctest-gpu.log" 2>&1
  status "ctest (gpu, others)" "$(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log" | tail -1)"
fi
if [ -x "$build/tests/gpu/fusegen_test_kernels" ]; then
  # (a time limit: a kernel that hangs must not take the machine's whole lease)
  timeout 150 "$build/tests/gpu/fusegen_test_kernels" >"$out/gpu-kernels.log" 2>&1
  rc=$?
  status gpu_kernels "rc=$rc"
  # a wrong or hung kernel: no tuning or timing of it (the time goes to the logs instead)
  [ $rc = 0 ] || bench=0
  grep -E '^[0-9]+ passed, [0-9]+ failed|worst|seed' "$out/gpu-kernels.log" >>"$out/summary.txt"
fi
# the numerics test after the benchmark (its report is long, the benchmark's figures are wanted
# first when the time is short)
run_numerics() {
  if [ -x "$build/tests/gpu/fusegen_test_numerics" ]; then
    "$build/tests/gpu/fusegen_test_numerics" >"$out/gpu-numerics.log" 2>&1
    status "gpu_numerics" "rc=$? $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/gpu-numerics.log" | tail -1)"
  fi
}

if [ $sanitize = 1 ] && command -v compute-sanitizer >/dev/null 2>&1 && [ -x "$build/tests/gpu/fusegen_test_kernels" ]; then
  for tool in ${FUSEGEN_SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    FUSEGEN_TEST_ONLY=${FUSEGEN_SANITIZE_ONLY:-} timeout "${FUSEGEN_SANITIZE_TIMEOUT:-150}" \
      compute-sanitizer --tool $tool --error-exitcode 9 \
      "$build/tests/gpu/fusegen_test_kernels" >"$out/sanitize-$tool.log" 2>&1
    status "compute-sanitizer $tool" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$tool.log" | tail -1)"
  done
fi

# FUSEGEN_TUNE=1: the tuning file of this GPU for the default library (docs/api.md, "Tuning
# files"), before the benchmark: fusegen-tune over bench/tune-shapes.json, then bench/shapes.json,
# resuming from the shipped file for this GPU (specs/tuning/default.<gpu>.json, <gpu> the second
# word of its name: h100, h200); the result goes there and the library is rebuilt with it, so that
# the benchmark below runs with it compiled in. It comes back as tuning.json.
if [ "${FUSEGEN_TUNE:-0}" = 1 ] && [ $bench = 1 ] && [ -x "$build/bench/fusegen-tune" ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | awk 'NR == 1 {print tolower($2)}')
  shipped=specs/tuning/default.${gpu:-gpu}.json
  [ -f "$shipped" ] && [ "${FUSEGEN_TUNE_FRESH:-0}" != 1 ] && cp "$shipped" "$out/tuning.json"
  : >"$out/tune.log"
  for shapes in bench/tune-shapes.json bench/shapes.json; do
    timeout "${FUSEGEN_TUNE_TIMEOUT:-420}" "$build/bench/fusegen-tune" --shapes "$shapes" -o "$out/tuning.json" \
      >>"$out/tune.log" 2>&1
    status "fusegen-tune $(basename "$shapes")" "rc=$? $(tail -1 "$out/tune.log")"
  done
  # the example library: its own tuning file, resumed the same way (the rebuild below takes it in);
  # FUSEGEN_TUNE_EXAMPLE=0 leaves it as shipped
  if [ -f "$build/libllama_block.so" ] && [ "${FUSEGEN_TUNE_EXAMPLE:-1}" != 0 ]; then
    shipped_llama=specs/examples/tuning/llama_block.${gpu:-gpu}.json
    [ -f "$shipped_llama" ] && [ "${FUSEGEN_TUNE_FRESH:-0}" != 1 ] && cp "$shipped_llama" "$out/tuning-llama.json"
    timeout "${FUSEGEN_TUNE_TIMEOUT:-420}" "$build/bench/fusegen-tune" --library "$build/libllama_block.so" \
      --shapes bench/tune-shapes-llama.json -o "$out/tuning-llama.json" >>"$out/tune.log" 2>&1
    status "fusegen-tune (example)" "rc=$? $(tail -1 "$out/tune.log")"
    [ -s "$out/tuning-llama.json" ] && mkdir -p specs/examples/tuning && cp "$out/tuning-llama.json" "$shipped_llama"
  fi
  if [ $tune_only = 1 ]; then
    status "tuning" "$out/tuning.json ($(grep -c '"spec_kernel"' "$out/tuning.json" 2>/dev/null) entries)"
  elif [ -s "$out/tuning.json" ] && cp "$out/tuning.json" "$shipped" &&
     cmake -S . -B "$build" >>"$out/build.log" 2>&1 && cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1; then
    status "rebuilt with" "$shipped"
  else
    status "rebuilt with" "no tuning (see tune.log, build.log)"
  fi
fi
if [ $tune_only = 1 ]; then
  echo; cat "$out/summary.txt"; exit 0
fi

if [ $bench = 1 ] && [ -x "$build/bench/fusegen-bench" ]; then
  timeout 300 "$build/bench/fusegen-bench" --csv "$out/bench.csv" --json "$out/bench.json" ${FUSEGEN_BENCH_ARGS:-} >"$out/bench.log" 2>&1
  status bench "rc=$?"
  tail -30 "$out/bench.log"
  # problems outside the sample above (bench/shapes-unseen.json): speed must hold beyond it
  if [ -f bench/shapes-unseen.json ]; then
    timeout 300 "$build/bench/fusegen-bench" --shapes bench/shapes-unseen.json --csv "$out/bench-unseen.csv" \
      ${FUSEGEN_BENCH_ARGS:-} >"$out/bench-unseen.log" 2>&1
    status "bench (unseen shapes)" "rc=$? $(grep -m1 -E 'speed-up over unfused' "$out/bench-unseen.log" | sed 's/^ *//')"
  fi
  # decode steps (bench/shapes-decode.json) with every side's weights read from DRAM, as a model's
  # decode step reads them (--cold-weights; decisions.md, "Split K reduced inside the partial kernel")
  if [ -f bench/shapes-decode.json ]; then
    timeout 300 "$build/bench/fusegen-bench" --shapes bench/shapes-decode.json --cold-weights \
      --csv "$out/bench-decode.csv" ${FUSEGEN_BENCH_ARGS:-} >"$out/bench-decode.log" 2>&1
    status "bench (decode, cold weights)" "rc=$? $(grep -m1 -E 'speed-up over unfused' "$out/bench-decode.log" | sed 's/^ *//')"
  fi
fi
run_numerics
# FUSEGEN_ALL_VARIANTS=1: every eligible variant timed beside the selected one (--quick), on both
# shapes files, the decode set with the weights from DRAM and the off-sector set, and the dispatch's choice
# against the fastest (bench/select_vs_best.py: the fused problems from each CSV, the plain
# GEMMs from each log)
if [ $bench = 1 ] && [ "${FUSEGEN_ALL_VARIANTS:-0}" = 1 ] && [ -x "$build/bench/fusegen-bench" ]; then
  timeout 300 "$build/bench/fusegen-bench" --all-variants --quick --csv "$out/all-variants.csv" >"$out/all-variants.log" 2>&1
  timeout 300 "$build/bench/fusegen-bench" --shapes bench/shapes-unseen.json --all-variants --quick \
    --csv "$out/all-variants-unseen.csv" >"$out/all-variants-unseen.log" 2>&1
  timeout 300 "$build/bench/fusegen-bench" --shapes bench/shapes-decode.json --cold-weights --all-variants --quick \
    --csv "$out/all-variants-decode.csv" >"$out/all-variants-decode.log" 2>&1
  timeout 300 "$build/bench/fusegen-bench" --shapes bench/shapes-offsector.json --all-variants --quick \
    --csv "$out/all-variants-offsector.csv" >"$out/all-variants-offsector.log" 2>&1
  : >"$out/select-vs-best.txt"
  order="$build/tests/unit/runtime/fusegen_test_dispatch_order"
  for f in all-variants all-variants-unseen all-variants-decode all-variants-offsector; do
    for ext in csv log; do
      judged=$(python3 bench/select_vs_best.py "$out/$f.$ext" 2>&1)
      printf '%s\n' "$judged" >>"$out/select-vs-best.txt"
      status "selected/best $f.$ext" \
        "$(printf '%s\n' "$judged" | grep 'geometric mean' | sed 's/^ *selected\/best: //')"
      # the model alone (no tuning): its first variant in the dispatch order tool's order
      [ -x "$order" ] || continue
      judged=$(python3 bench/select_vs_best.py --model "$order" "$out/$f.$ext" 2>&1)
      printf 'model alone:\n%s\n' "$judged" >>"$out/select-vs-best.txt"
      status "model/best $f.$ext" \
        "$(printf '%s\n' "$judged" | grep 'geometric mean' | sed 's/^ *selected\/best: //')"
    done
  done
fi
# Experiments: each spec of FUSEGEN_BENCH_SPECS (space-separated paths, e.g. bench/specs/*.json)
# benchmarked through the JIT with every variant (fusegen-bench --spec FILE --all-variants).
if [ $bench = 1 ] && [ -n "${FUSEGEN_BENCH_SPECS:-}" ] && [ -x "$build/bench/fusegen-bench" ]; then
  for spec in $FUSEGEN_BENCH_SPECS; do
    name=$(basename "$spec" .json)
    timeout 300 "$build/bench/fusegen-bench" --spec "$spec" --all-variants ${FUSEGEN_SPEC_BENCH_ARGS:---quick} \
      --csv "$out/bench-$name.csv" >"$out/bench-$name.log" 2>&1
    status "bench --spec $name" "rc=$?"
  done
fi
# eager PyTorch vs torch.compile vs the fusegen op (needs torch on the machine)
if [ "${FUSEGEN_TORCH_COMPARE:-0}" = 1 ] && python3 -c 'import torch' >/dev/null 2>&1; then
  FUSEGEN_LIBRARY="$PWD/$build/libfusegen_default.so" PYTHONPATH="$PWD/integrations/pytorch" \
    timeout "${FUSEGEN_TORCH_COMPARE_TIMEOUT:-240}" python3 bench/torch_compare.py ${FUSEGEN_TORCH_COMPARE_ARGS:-} \
    --csv "$out/torch_compare.csv" >"$out/torch_compare.log" 2>&1
  status torch_compare "rc=$?"
  tail -25 "$out/torch_compare.log"
  FUSEGEN_LIBRARY="$PWD/$build/libfusegen_default.so" PYTHONPATH="$PWD/integrations/pytorch" \
    timeout 120 python3 bench/torch_host_time.py >"$out/torch_host_time.log" 2>&1
  status torch_host_time "rc=$?"
  cat "$out/torch_host_time.log"
  # the pre-norm and gated kernels of specs/examples/llama_block.json, and its block's linear path
  if [ -f "$build/libllama_block.so" ]; then
    FUSEGEN_LIBRARY="$PWD/$build/libllama_block.so" PYTHONPATH="$PWD/integrations/pytorch" \
      timeout 300 python3 bench/llama_block.py --quick --block --csv "$out/llama_block.csv" >"$out/llama_block.log" 2>&1
    status llama_block "rc=$? $(grep -m1 geomean "$out/llama_block.log")"
  fi
fi
echo
cat "$out/summary.txt"
