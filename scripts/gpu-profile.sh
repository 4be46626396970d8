#!/usr/bin/env bash
# On a GPU machine: builds fusegen-bench and profiles, with Nsight Compute, the kernels of one
# benchmark problem (the fused GEMM, its normalize kernel, and the plain GEMM), each on its
# sixth launch (after warm-up). Writes under $OUT (default ./gpu-out): profile.ncu-rep, the
# details page and the per-SASS-instruction source page (stall samples) as CSV; prints a
# short summary last.
#   scripts/gpu-profile.sh [PROBLEM-SUBSTRING]      (default: "bert-large attn")
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
problem=${1:-bert-large attn}
[ -f .device-deps/env.sh ] && . .device-deps/env.sh
build=build-gpu
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if ! { cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFUSEGEN_CUDA_ARCHITECTURES=90a-real &&
       cmake --build "$build" -j "$(nproc)" --target fusegen-bench; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"; echo "build FAILED"; exit 1
fi
command -v ncu >/dev/null 2>&1 || { echo "gpu-profile: ncu not found"; exit 1; }
# Clocks are left alone (the benchmark does not lock them either).
ncu --clock-control none --set full --import-source yes \
    -k 'regex:128x256x64_s3_split_gemm1$|128x256x64_s3_split_normalize1$|^fusegen_default_proj_sm90a_128x256x64_s3_gemm1$' \
    --launch-skip 5 --launch-count 3 -f -o "$out/profile" \
    "$build/bench/fusegen-bench" --quick --only "$problem" >"$out/ncu.log" 2>&1
echo "ncu rc=$?" >>"$out/ncu.log"
ncu --import "$out/profile.ncu-rep" --page details >"$out/details.txt" 2>&1
ncu --import "$out/profile.ncu-rep" --page source --csv --print-source sass >"$out/source.csv" 2>&1
ncu --import "$out/profile.ncu-rep" --page raw --csv \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second \
    >"$out/raw.csv" 2>&1
tail -5 "$out/ncu.log"
cat "$out/raw.csv"
