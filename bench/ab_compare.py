#!/usr/bin/env python3
"""Compares fusegen-bench runs of two or more builds (A, B, C, ...), each run a CSV of
`fusegen-bench --csv`; every build after A is compared with A, one table each.

    bench/ab_compare.py [--plain] A1.csv A2.csv ... -- B1.csv B2.csv ... [-- C1.csv ...]

For every problem (the selected kernel's row) it prints the median fusegen time of each side,
B / A, and each side's spread over its runs (max / min - 1), so that a difference smaller than
the noise shows as such. Because the device's speed drifts between runs (cuBLASLt's own time
moves by a few percent), it also compares fusegen / cuBLASLt-GEMM taken within each run:
"B/A in-run" is the median of B's in-run ratios over the median of A's. When the CSVs carry the
SM clock fusegen ran at (`fusegen_mhz`, fusegen-bench with NVML), the median clock of each side
is printed too: under the power cap a kernel that draws less can run at a higher clock.
With --plain the times compared are fusegen's plain GEMM's (`fusegen_gemm_ms`, the `proj`
kernel the benchmark times beside each fused problem) instead of the selected fused kernel's.
Runs should alternate (A B A B, or A B C A B C) on one machine, back to back. Exit status: 0,
or 2 on bad input.
"""
import csv
import math
import statistics
import sys


def number(text):
    """A CSV field as a float; NaN when empty, absent or not a number."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def load(path, column="fusegen_ms"):
    """problem -> (time in column, gemm_ms, fusegen_mhz or NaN) of the selected kernel's row, from
    one CSV (column: fusegen_ms, or fusegen_gemm_ms for fusegen's plain GEMM)."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("selected") != "1" or r.get("check") != "ok":
                continue
            try:
                fused, gemm = float(r[column]), float(r["gemm_ms"])
            except (KeyError, TypeError, ValueError):
                continue
            rows[r["problem"]] = (fused, gemm, number(r.get("fusegen_mhz")) if column == "fusegen_ms" else math.nan)
    return rows


def median_clock(values):
    """The median of the finite clocks, NaN when there is none."""
    finite = [v for v in values if math.isfinite(v)]
    return statistics.median(finite) if finite else math.nan


def spread(values):
    return max(values) / min(values) - 1.0 if len(values) > 1 and min(values) > 0 else 0.0


def split_groups(argv):
    """The CSV lists between '--' separators, or None when there are fewer than two or one is empty."""
    groups, current = [], []
    for a in argv:
        if a == "--":
            groups.append(current)
            current = []
        else:
            current.append(a)
    groups.append(current)
    return groups if len(groups) >= 2 and all(groups) else None


def compare(label, runs_a, runs_b):
    """Prints one table, A against the build named label; False when no problem is in every run."""
    problems = [p for p in runs_a[0] if all(p in r for r in runs_a + runs_b)]
    if not problems:
        sys.stderr.write(f"ab_compare.py: no problem with an ok selected row in every run of A and {label}\n")
        return False
    clocks = any(math.isfinite(r[p][2]) for r in runs_a + runs_b for p in problems)
    print(f"{len(runs_a)} run(s) of A, {len(runs_b)} of {label}; times in ms (medians)"
          + ("; fusegen's SM clock in MHz (medians)" if clocks else ""))
    print(f"{'problem':26} {'A':>9} {label:>9} {label + '/A':>7} {label + '/A in-run':>11} "
          f"{'spread A':>9} {'spread ' + label:>9}" + (f" {'MHz A':>6} {'MHz ' + label:>6}" if clocks else ""))
    log_ratio, log_inrun = [], []
    for p in problems:
        fa = [r[p][0] for r in runs_a]
        fb = [r[p][0] for r in runs_b]
        ia = [r[p][0] / r[p][1] for r in runs_a]
        ib = [r[p][0] / r[p][1] for r in runs_b]
        ratio = statistics.median(fb) / statistics.median(fa)
        inrun = statistics.median(ib) / statistics.median(ia)
        log_ratio.append(ratio)
        log_inrun.append(inrun)
        mhz = ""
        if clocks:
            ca, cb = median_clock([r[p][2] for r in runs_a]), median_clock([r[p][2] for r in runs_b])
            mhz = "".join(f" {c:6.0f}" if math.isfinite(c) else f" {'-':>6}" for c in (ca, cb))
        print(f"{p:26} {statistics.median(fa):9.4f} {statistics.median(fb):9.4f} {ratio:7.3f} {inrun:11.3f} "
              f"{100 * spread(fa):8.1f}% {100 * spread(fb):8.1f}%{mhz}")
    print(f"{'geometric mean':26} {'':9} {'':9} {statistics.geometric_mean(log_ratio):7.3f} "
          f"{statistics.geometric_mean(log_inrun):11.3f}")
    return True


def main(argv):
    column = "fusegen_ms"
    if argv and argv[0] == "--plain":
        column, argv = "fusegen_gemm_ms", argv[1:]
    groups = split_groups(argv)
    if groups is None:
        sys.stderr.write("usage: ab_compare.py [--plain] A.csv... -- B.csv... [-- C.csv...]\n")
        return 2
    if len(groups) > 26:
        sys.stderr.write("ab_compare.py: at most 26 builds\n")
        return 2
    try:
        runs = [[load(p, column) for p in group] for group in groups]
    except (OSError, csv.Error) as e:
        sys.stderr.write(f"ab_compare.py: {e}\n")
        return 2
    ok = True
    for i, runs_b in enumerate(runs[1:], start=1):
        if i > 1:
            print()
        ok = compare(chr(ord("A") + i), runs[0], runs_b) and ok
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
