#!/usr/bin/env python3
"""Each kernel's time from an Nsight Compute raw CSV of gpu__time_duration.sum (one row a
launch), as `scripts/gpu-profile.sh` writes it with FUSEGEN_PROFILE_DURATIONS=1: per kernel
name, the launches and the median duration in microseconds, longest first. ncu runs kernels one
at a time, so these are the kernels' own times without the overlap of programmatic dependent
launches: they show which kernel of a path costs what, not the path's time.

    bench/ncu_durations.py FILE.csv

Exit status: 0, 2 (not such a CSV, or no launch in it).
"""
import csv
import statistics
import sys

SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


def read(path):
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]   # ncu's own messages are unquoted
    rows = list(csv.reader(lines))
    if not rows or "Kernel Name" not in rows[0] or "gpu__time_duration.sum" not in rows[0]:
        return None
    name_col, time_col = rows[0].index("Kernel Name"), rows[0].index("gpu__time_duration.sum")
    scale, times = 1e-3, {}
    for r in rows[1:]:
        if len(r) <= max(name_col, time_col):
            continue
        value = r[time_col].replace(",", "")
        if r[time_col] in SCALE:   # the units row
            scale = SCALE[r[time_col]]
            continue
        try:
            us = float(value) * scale
        except ValueError:
            continue
        times.setdefault(r[name_col], []).append(us)
    return times


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        times = read(sys.argv[1])
    except (OSError, csv.Error, UnicodeDecodeError) as e:
        print(f"ncu_durations: {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    if not times:
        print(f"ncu_durations: {sys.argv[1]}: no launch with a gpu__time_duration.sum", file=sys.stderr)
        return 2
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{'median us':>10} {'launches':>8}  kernel")
    for k in sorted(med, key=lambda k: -med[k]):
        name = k if len(k) <= 110 else k[:107] + "..."
        print(f"{med[k]:10.2f} {len(times[k]):8d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
