#!/usr/bin/env bash
# The main job: build the generator, the runtime (and its JIT), generate specs/default.json and
# build the kernel library; not the tests nor the benchmark (scripts/test.sh builds those).
#   scripts/build.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
fusegen_need
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
# the targets of the main job that this configuration has (the runtime, its JIT and the kernel
# library need CUDA); the benchmark's targets are configured but not built
avail=$(cmake --build "$build" --target help | sed -E 's/^\.\.\. //; s/:.*//; s/ .*//')
targets=()
for t in fusegen fusegen_runtime fusegen_jit fusegen_default fusegen_default_shared; do
  if printf '%s\n' "$avail" | grep -qx -- "$t"; then targets+=("$t"); fi
done
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
echo
echo "fusegen: generator:      $build/fusegen"
if [ -f "$build/libfusegen_default.a" ]; then
  echo "fusegen: kernel library: $build/libfusegen_default.a and $build/libfusegen_default.so"
  echo "fusegen: its header:     $build/generated/fusegen_default/fusegen_default.h (with runtime/fusegen.h)"
fi
