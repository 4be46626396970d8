#!/bin/sh
# Two processes compile the same kernel into an empty JIT cache at once: both must succeed, and
# the entry left behind must be whole (a third process reads it as a hit), with no temporary
# files left over.
#   test_jit_concurrency.sh TEST_JIT WORKDIR
set -u
bin=$1
work=$2
rm -rf "$work"
mkdir -p "$work/cache" || exit 1
"$bin" compile-one "$work/cache" >"$work/one.log" 2>&1 &
p1=$!
"$bin" compile-one "$work/cache" >"$work/two.log" 2>&1 &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
cat "$work/one.log" "$work/two.log"
if [ $r1 -eq 77 ] || [ $r2 -eq 77 ]; then exit 77; fi
if [ $r1 -ne 0 ] || [ $r2 -ne 0 ]; then
    echo "FAILED: a compiling process exited with $r1 / $r2"
    exit 1
fi
"$bin" expect-hit "$work/cache" || { echo "FAILED: the entry is not a valid hit"; exit 1; }
rm -rf "$work"
echo "both processes compiled; the entry is valid"
