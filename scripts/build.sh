#!/usr/bin/env bash
# The main job: build the generator, generate specs/default.json, build the kernel library.
#   scripts/build.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
fusegen_need
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs"
echo
echo "fusegen: generator:      $build/fusegen"
if [ -f "$build/libfusegen_default.a" ]; then
  echo "fusegen: kernel library: $build/libfusegen_default.a and $build/libfusegen_default.so"
  echo "fusegen: its header:     $build/generated/fusegen_default/fusegen_default.h (with runtime/fusegen.h)"
fi
