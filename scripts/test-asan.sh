#!/usr/bin/env bash
# Builds the CPU parts with AddressSanitizer and UndefinedBehaviorSanitizer (CMake preset
# `asan`, folder build-asan, no CUDA compile) and runs every test not labelled gpu in it.
# Any sanitizer report fails the test that triggered it.
#   scripts/test-asan.sh [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
fusegen_need
jobs=$(nproc 2>/dev/null || echo 2)
# Reports abort (a distinct exit status that no test expects); leaks are reported too.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs" "$@"
