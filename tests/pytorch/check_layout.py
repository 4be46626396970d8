"""Compares the ctypes structs of fusegen_torch with the C header, field by field.

usage: python3 check_layout.py LAYOUT_DUMP_EXECUTABLE
Runs the C program (layout_dump.c, compiled against runtime/fusegen.h), prints the same lines
from the ctypes declarations, and exits 1 on the first difference (0 when all agree). Needs
neither PyTorch nor a GPU."""

import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "integrations", "pytorch"))
from fusegen_torch import _capi  # noqa: E402

STRUCTS = [("fusegen_op", _capi.Op), ("fusegen_problem", _capi.Problem),
           ("fusegen_args", _capi.Args), ("fusegen_kernel", _capi.Kernel),
           ("fusegen_launch_gemm", _capi.LaunchGemm),
           ("fusegen_tuned_entry", _capi.TunedEntry), ("fusegen_tuned_device", _capi.TunedDevice),
           ("fusegen_library", _capi.Library)]


def python_lines():
    out = []
    for cname, cls in STRUCTS:
        out.append(f"{cname} sizeof {ctypes.sizeof(cls)} align {ctypes.alignment(cls)}")
        for field, _ in cls._fields_:
            desc = getattr(cls, field)
            out.append(f"{cname}.{field} {desc.offset} {desc.size}")
    out.append(f"enum fusegen_status sizeof {ctypes.sizeof(ctypes.c_int)}")
    out.append(f"enum fusegen_dtype sizeof {ctypes.sizeof(ctypes.c_int)}")
    out.append(f"enum fusegen_op_kind sizeof {ctypes.sizeof(ctypes.c_int)}")
    out.append(f"FUSEGEN_MAX_STORES {_capi.FUSEGEN_MAX_STORES}")
    out.append(f"FUSEGEN_OP_LAYERNORM {_capi.OP_LAYERNORM}")
    out.append(f"FUSEGEN_STRATEGY_CLUSTER {_capi.STRATEGY_CLUSTER}")
    out.append(f"FUSEGEN_ERR_CUDA {_capi.ERR_CUDA}")
    out.append(f"FUSEGEN_DTYPE_BF16 {_capi.DTYPE_BF16}")
    out.append(f"enum fusegen_family sizeof {ctypes.sizeof(ctypes.c_int)}")
    out.append(f"FUSEGEN_FAMILY_HOPPER {_capi.FAMILY_HOPPER}")
    out.append(f"enum fusegen_schedule sizeof {ctypes.sizeof(ctypes.c_int)}")
    out.append(f"FUSEGEN_SCHEDULE_COOPERATIVE {_capi.SCHEDULE_COOPERATIVE}")
    out.append(f"FUSEGEN_SCHEDULE_PINGPONG {_capi.SCHEDULE_PINGPONG}")
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    c_lines = subprocess.run([sys.argv[1]], check=True, capture_output=True,
                             text=True).stdout.splitlines()
    py_lines = python_lines()
    bad = 0
    for i in range(max(len(c_lines), len(py_lines))):
        c = c_lines[i] if i < len(c_lines) else "(missing)"
        p = py_lines[i] if i < len(py_lines) else "(missing)"
        if c != p:
            print(f"layout mismatch: C: {c!r}  ctypes: {p!r}")
            bad += 1
    print(f"check_layout: {len(c_lines)} lines from C, {len(py_lines)} from ctypes, "
          f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
