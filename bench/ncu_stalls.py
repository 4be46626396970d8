#!/usr/bin/env python3
"""Summarizes the warp-stall samples of one kernel from Nsight Compute's source page.

Input: the CSV that scripts/gpu-profile.sh writes per kernel (`ncu --import REPORT --page source
--csv --print-source sass`): one row per SASS instruction, with its sample count, its samples by
stall reason and how often it ran.

  bench/ncu_stalls.py source-k1.csv                 the instructions with the most samples
  bench/ncu_stalls.py source-k1.csv --landmarks     cumulative samples along the code, at the
                                                    barriers, waits, wgmma and copy instructions
  bench/ncu_stalls.py source-k1.csv --regions 0,250,350,2600,4400
                                                    samples, top stall reasons and executed warp
                                                    instructions per region (instruction
                                                    indices, as --landmarks prints); --per N
                                                    divides the instructions by N (tiles x warps:
                                                    instructions a warp per tile)

Samples are taken over all warps, so a region's share is of all warps' time; a kernel's roles
(producer, consumer warps) occupy different regions of its code.
"""
import argparse
import collections
import csv
import signal
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
LANDMARKS = ("HGMMA", "BAR.", "SYNCS", "UBLKCP", "UTMA", "WARPGROUP", "EXIT", "MEMBAR", "DEPBAR")


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # The first row names the kernel, the second holds the column names.
    header = rows[1]
    col = {name: i for i, name in enumerate(header)}
    for need in ("Source", SAMPLES, EXECUTED):
        if need not in col:
            sys.exit(f"{path}: no column '{need}' (not an ncu source page CSV?)")
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    out = []
    for i, r in enumerate(rows[2:]):
        by_reason = {h[len("stall_"):]: int(r[col[h]] or 0) for h in reasons}
        out.append({
            "index": i,
            "source": r[col["Source"]].strip(),
            "samples": int(r[col[SAMPLES]] or 0),
            "executed": r[col[EXECUTED]],
            "reasons": by_reason,
        })
    return rows[0][1] if len(rows[0]) > 1 else "?", out


def count(text):
    """An executed-instructions cell as a number ('-' or empty: 0)."""
    try:
        return int(float(str(text).replace(",", "")))
    except ValueError:
        return 0


def top_reasons(counter, n=3):
    return ", ".join(f"{k} {v}" for k, v in counter.most_common(n) if v)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `| head` ends the listing quietly
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25, help="instructions to list (default 25)")
    ap.add_argument("--landmarks", action="store_true")
    ap.add_argument("--regions", help="comma-separated instruction indices bounding the regions")
    ap.add_argument("--per", type=float, default=1.0, help="divide a region's executed instructions by this")
    a = ap.parse_args()
    kernel, ins = read(a.csv)
    total = sum(x["samples"] for x in ins) or 1
    print(f"{kernel}: {total} samples over {len(ins)} instructions")
    if a.regions:
        bounds = [int(b) for b in a.regions.split(",")]
        for lo, hi in zip(bounds, bounds[1:]):
            part = ins[lo:hi]
            reasons = collections.Counter()
            for x in part:
                reasons.update(x["reasons"])
            s = sum(x["samples"] for x in part)
            ran = sum(count(x["executed"]) for x in part) / (a.per or 1.0)
            print(f"[{lo:5d}, {hi:5d})  {100 * s / total:5.1f}%  ran {ran:10.0f}  {top_reasons(reasons, 4)}")
    elif a.landmarks:
        run = 0
        for x in ins:
            run += x["samples"]
            if x["samples"] > 0.003 * total or any(m in x["source"] for m in LANDMARKS):
                print(f"{x['index']:5d} {100 * x['samples'] / total:5.1f}%  cum {100 * run / total:5.1f}%  "
                      f"{x['source'][:64]:64s} ran {x['executed']}")
    else:
        for x in sorted(ins, key=lambda x: -x["samples"])[: a.top]:
            print(f"{x['index']:5d} {100 * x['samples'] / total:5.1f}%  {x['source'][:64]:64s} "
                  f"ran {x['executed']:>8s}  {top_reasons(collections.Counter(x['reasons']))}")


if __name__ == "__main__":
    main()
