#!/usr/bin/env bash
# Builds everything and runs the tests. GPU tests exit 77 (skipped) on a machine without a GPU.
#   scripts/test.sh [BUILD_DIR] [ctest args...]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
fusegen_need
case ${1:-} in
  -*) echo "scripts/test.sh: the first argument is the build folder: scripts/test.sh [BUILD_DIR] [ctest args...] (e.g. scripts/test.sh build -R cli)" >&2
      exit 2 ;;
esac
build=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure -j "$jobs" "$@"
