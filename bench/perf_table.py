#!/usr/bin/env python3
"""The tables of docs/performance.md from fusegen-bench CSVs (--csv FILE).

    python3 bench/perf_table.py bench/results/h100/bench.csv [more.csv ...]

Prints, per file, a markdown table of the fused problems and one of the chains (times in ms,
variant names less the spec kernel's name), then the geometric means the summary quotes:
unfused/fused over all fused problems and over decode ones (M <= 256), fused/gemm, the plain
GEMM against cuBLASLt, the chains, and the problems where fused is slower than unfused by
more than 2%. Only rows whose check passed count.
"""
import csv
import math
import sys


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def short(kernel):
    for prefix in ("proj_bias_residual_layernorm_", "block_tail_"):
        if kernel.startswith(prefix):
            return kernel[len(prefix):]
    return kernel


def table(path):
    # (an --all-variants CSV: its selected rows)
    rows = [r for r in csv.DictReader(open(path, newline="")) if r.get("check") == "ok" and r.get("selected", "1") == "1"]
    fused = [r for r in rows if r["kind"] == "fused"]
    chains = [r for r in rows if r["kind"] == "chain"]
    f = float
    print(f"<!-- {path} -->")
    print("| problem | M x N x K | cuBLASLt GEMM | unfused | fusegen | fusegen GEMM | unfused/fused | fused/gemm"
          " | GEMM/cuBLASLt | variant |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in fused:
        g = f(r["fusegen_gemm_ms"] or 0)
        ratio = f"{g / f(r['gemm_ms']):.3f}" if g > 0 else "-"
        print(f"| {r['problem']} | {r['m']}x{r['n']}x{r['k']} | {f(r['gemm_ms']):.4f} | {f(r['unfused_ms']):.4f}"
              f" | {f(r['fusegen_ms']):.4f} | {g:.4f} | {f(r['unfused_over_fused']):.3f}"
              f" | {f(r['fused_over_gemm']):.3f} | {ratio} | {short(r['kernel'])} |")
    if chains:
        print()
        print("| chain | M x N x K -> N2 | two cuBLASLt GEMMs | unfused | fusegen | fused/GEMMs | unfused/fused"
              " | variant |")
        print("|---|---|---:|---:|---:|---:|---:|---|")
        for r in chains:
            print(f"| {r['problem']} | {r['m']}x{r['n']}x{r['k']}->{r['n2']} | {f(r['gemm_ms']):.4f}"
                  f" | {f(r['unfused_ms']):.4f} | {f(r['fusegen_ms']):.4f} | {f(r['fused_over_gemm']):.3f}"
                  f" | {f(r['unfused_over_fused']):.3f} | {short(r['kernel'])} |")
    print()
    speed = [f(r["unfused_over_fused"]) for r in fused]
    decode = [f(r["unfused_over_fused"]) for r in fused if int(r["m"]) <= 256]
    plain = [f(r["fusegen_gemm_ms"]) / f(r["gemm_ms"]) for r in fused if f(r["fusegen_gemm_ms"] or 0) > 0]
    slower = [r["problem"] for r in fused + chains if f(r["unfused_over_fused"]) < 0.98]
    print(f"unfused/fused: geomean {geomean(speed):.3f} over {len(speed)} problems"
          f" ({min(speed, default=0):.2f}-{max(speed, default=0):.2f})")
    if decode:
        print(f"decode (M <= 256): geomean {geomean(decode):.3f} over {len(decode)}")
    print(f"fused/gemm: geomean {geomean([f(r['fused_over_gemm']) for r in fused]):.3f}")
    if plain:
        print(f"plain GEMM / cuBLASLt: geomean {geomean(plain):.3f}, max {max(plain):.3f}")
    if chains:
        print(f"chains unfused/fused: geomean {geomean([f(r['unfused_over_fused']) for r in chains]):.3f}"
              f" over {len(chains)}")
    print(f"slower than unfused by more than 2%: {len(slower)} of {len(fused) + len(chains)}"
          + (f" ({', '.join(slower)})" if slower else ""))


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for i, path in enumerate(argv[1:]):
        if i:
            print()
        table(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
