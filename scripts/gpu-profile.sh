#!/usr/bin/env bash
# On a GPU machine: builds fusegen-bench and profiles, with Nsight Compute, the kernels of one
# benchmark problem, each on its sixth launch (after warm-up): the default library's 128x256 s3
# split GEMM kernel (the one its dispatch selects for the default problem and for K > 3072 at
# N >= 1024; the names are in the ncu filters below), its normalize kernel, and the plain GEMM
# proj_sm90a_128x256x64_s3. Writes under $OUT
# (default ./gpu-out) build.log and profile.tar.gz: per kernel the report, its details page,
# its per-SASS-instruction source page (stall samples) as CSV and a few raw metrics; prints
# a short summary last. bench/ncu_stalls.py reads the source pages (where the warps wait).
#   scripts/gpu-profile.sh [PROBLEM-SUBSTRING]      (default: "bert-large ffn")
# Environment: FUSEGEN_PROFILE_KERNELS (space-separated ncu -k filters instead of the three
# above, e.g. 'regex:64x256x64_s4_gemm1$') and FUSEGEN_PROFILE_BENCH_ARGS (more fusegen-bench
# options, e.g. '--spec bench/specs/pingpong.json' to profile a spec's kernels through the JIT).
# FUSEGEN_PROFILE_DURATIONS=1: instead, every kernel the problem's timed paths launch (cuBLASLt's,
# the unfused path's, fusegen's), its time alone (gpu__time_duration.sum) in durations.csv, and
# bench/ncu_durations.py's median a kernel printed (durations.txt): which kernel costs what.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
problem=${1:-bert-large ffn}
[ -f .device-deps/env.sh ] && . .device-deps/env.sh
build=build-gpu
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if ! { cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFUSEGEN_CUDA_ARCHITECTURES=90a-real &&
       cmake --build "$build" -j "$(nproc)" --target fusegen-bench; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"; echo "build FAILED"; exit 1
fi
command -v ncu >/dev/null 2>&1 || { echo "gpu-profile: ncu not found"; exit 1; }
if [ "${FUSEGEN_PROFILE_DURATIONS:-0}" = 1 ]; then
  ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw --launch-skip 200 --launch-count 2000 \
      "$build/bench/fusegen-bench" --quick --only "$problem" ${FUSEGEN_PROFILE_BENCH_ARGS:-} >"$out/durations.csv" 2>"$out/ncu.log"
  echo "ncu rc=$?"
  python3 bench/ncu_durations.py "$out/durations.csv" | tee "$out/durations.txt"
  exit 0
fi
# Clocks are left alone (the benchmark does not lock them either). One ncu run per kernel, so
# each is caught on its own sixth launch.
prof=$(mktemp -d)
i=0
kernels=${FUSEGEN_PROFILE_KERNELS:-'regex:128x256x64_s3_split_gemm1$ regex:128x256x64_s3_split_normalize1$ regex:^fusegen_default_proj_sm90a_128x256x64_s3_gemm1$'}
for k in $kernels; do
  i=$((i + 1))
  ncu --clock-control none --set full -k "$k" --launch-skip 5 --launch-count 1 -f -o "$prof/k$i" \
      "$build/bench/fusegen-bench" --quick --only "$problem" ${FUSEGEN_PROFILE_BENCH_ARGS:-} >"$prof/ncu-k$i.log" 2>&1
  echo "ncu rc=$?" >>"$prof/ncu-k$i.log"
  ncu --import "$prof/k$i.ncu-rep" --page details >"$prof/details-k$i.txt" 2>&1
  ncu --import "$prof/k$i.ncu-rep" --page source --csv --print-source sass >"$prof/source-k$i.csv" 2>&1
  ncu --import "$prof/k$i.ncu-rep" --page raw --csv \
      --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second \
      >"$prof/raw-k$i.csv" 2>&1
  tail -2 "$prof/ncu-k$i.log"
  cut -d, -f5,12- "$prof/raw-k$i.csv" | tail -1
done
# Everything in one archive, one file to copy off the GPU machine.
tar -czf "$out/profile.tar.gz" -C "$prof" .
