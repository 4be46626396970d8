#!/bin/sh
# run_pytorch_tests.sh - the GPU tests of the PyTorch integration (CTest: pytorch_ops).
#
# usage: run_pytorch_tests.sh SOURCE_DIR KERNEL_LIBRARY [RUNTIME_LIBRARY [TESTS]]
#   SOURCE_DIR       the fusegen source tree (integrations/pytorch goes on PYTHONPATH)
#   KERNEL_LIBRARY   the shared kernel library (libfusegen_default.so)
#   RUNTIME_LIBRARY  a shared build of the runtime, used only if KERNEL_LIBRARY lacks it ("": none)
#   TESTS            what pytest runs, relative to SOURCE_DIR (default tests/pytorch)
#
# Exits 77 (CTest: skipped) when python3 cannot import torch, torch sees no CUDA device, or
# pytest is missing; otherwise runs pytest on tests/pytorch and returns its status, except that
# "no tests collected" (pytest's 5) is a failure. $FUSEGEN_PYTHON overrides python3.
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 SOURCE_DIR KERNEL_LIBRARY [RUNTIME_LIBRARY]" >&2
    exit 2
fi
src=$1
lib=$2
rt=${3:-}
tests=${4:-tests/pytorch}
py=${FUSEGEN_PYTHON:-python3}
case $src in /*) ;; *) src=$(pwd)/$src ;; esac
case $lib in /*) ;; *) lib=$(pwd)/$lib ;; esac
case $rt in /* | "") ;; *) rt=$(pwd)/$rt ;; esac

if ! command -v "$py" >/dev/null 2>&1; then
    echo "pytorch_ops: skipped: $py is not on PATH"
    exit 77
fi
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 77)'
rc=$?
if [ $rc -eq 77 ]; then
    echo "pytorch_ops: skipped: torch.cuda.is_available() is False (no CUDA device)"
    exit 77
elif [ $rc -ne 0 ]; then
    echo "pytorch_ops: skipped: $py cannot import torch"
    exit 77
fi
if ! "$py" -c 'import pytest' >/dev/null 2>&1; then
    echo "pytorch_ops: skipped: $py cannot import pytest (pip install pytest)"
    exit 77
fi
if [ ! -f "$lib" ]; then
    echo "pytorch_ops: FAILED: the kernel library $lib does not exist (build it first)"
    exit 1
fi

FUSEGEN_LIBRARY=$lib
export FUSEGEN_LIBRARY
if [ -n "$rt" ]; then
    FUSEGEN_RUNTIME_LIBRARY=$rt
    export FUSEGEN_RUNTIME_LIBRARY
fi
# Inside CTest a library that cannot be loaded is a failure, not a skip.
FUSEGEN_TORCH_REQUIRE_LIBRARY=1
export FUSEGEN_TORCH_REQUIRE_LIBRARY
PYTHONPATH="$src/integrations/pytorch${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
PYTHONDONTWRITEBYTECODE=1  # keep __pycache__ out of the source tree
export PYTHONDONTWRITEBYTECODE

cd "$src" || exit 1
"$py" -c 'import torch; print("pytorch_ops: torch", torch.__version__, "CUDA", torch.version.cuda, "device", torch.cuda.get_device_name())'
echo "pytorch_ops: FUSEGEN_LIBRARY=$FUSEGEN_LIBRARY${rt:+ FUSEGEN_RUNTIME_LIBRARY=$rt}"
"$py" -m pytest -q -rs -p no:cacheprovider "$tests"
rc=$?
if [ $rc -eq 5 ]; then
    echo "pytorch_ops: FAILED: pytest collected no tests"
    exit 1
fi
exit $rc
