#!/usr/bin/env python3
"""How good the dispatch's choice is: from `fusegen-bench --all-variants --csv FILE` (every
eligible variant of the library timed beside the selected one), for each problem the selected
variant's time over the fastest variant's whose check passed, and the geometric mean and the
largest of those ratios (issue targets: within 3% on every problem, 1% on the geometric mean with
tuning; 10% and 4% for the model alone).

    bench/select_vs_best.py FILE.csv [FILE.csv ...]

A problem whose selected variant failed its check, or that has no selected row, is reported and
makes the exit status 1. Exit status: 0, 1 (a problem could not be judged), 2 (bad input).
"""
import csv
import math
import sys


def judge(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, csv.Error) as e:
        print(f"select_vs_best: {path}: {e}", file=sys.stderr)
        return None
    needed = {"kind", "problem", "m", "n", "k", "n2", "fusegen_ms", "kernel", "selected", "check"}
    if not rows or not needed <= set(rows[0]):
        print(f"select_vs_best: {path}: not a fusegen-bench --all-variants CSV", file=sys.stderr)
        return None
    problems = {}
    for r in rows:
        problems.setdefault((r["kind"], r["problem"], r["m"], r["n"], r["k"], r["n2"]), []).append(r)
    ratios, bad = [], 0
    print(f"{path}")
    for key, group in problems.items():
        chosen = [r for r in group if r["selected"] == "1"]
        passed = [r for r in group if r["check"] == "ok"]
        if not chosen or chosen[0]["check"] != "ok" or not passed:
            print(f"  {key[1]:32s} no selected variant that passed its check")
            bad += 1
            continue
        best = min(passed, key=lambda r: float(r["fusegen_ms"]))
        ratio = float(chosen[0]["fusegen_ms"]) / float(best["fusegen_ms"])
        ratios.append(ratio)
        shape = f"{key[2]}x{key[3]}x{key[4]}" + (f"->{key[5]}" if key[5] not in ("", "0") else "")
        better = f"  (best: {best['kernel']})" if ratio > 1.03 else ""
        print(f"  {key[1]:32s} {shape:22s} selected/best {ratio:.3f} of {len(group)} variants{better}")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"  selected/best: geometric mean {geo:.3f}, max {max(ratios):.3f} over {len(ratios)} problems; "
              f"{sum(1 for x in ratios if x > 1.03)} above 1.03")
    return bad


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    status = 0
    for path in sys.argv[1:]:
        bad = judge(path)
        if bad is None:
            return 2
        if bad:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
