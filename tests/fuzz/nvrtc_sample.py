#!/usr/bin/env python3
"""nvrtc_sample.py - "check implies compile", sampled (not part of CI: it takes minutes).

The fuzz target holds "a spec that checks emits"; this holds the next step for a sample: a spec
that `fusegen check` accepts must compile. It makes random specs (or takes them from corpus
folders), keeps those that `fusegen check` accepts, compiles each with `fusegen check --nvrtc`
(NVRTC, no GPU needed) and reports every spec that checks but does not compile. Each such spec
is kept under OUT/<kind>/ (kind: `spill`, a register spill; `compile`, any other compiler error;
`crash`, fusegen died or gave an exit status other than 0 or 1) with NVRTC's messages beside it
(`.txt`), and a summary line per distinct reason is printed at the end. Exit 1 when a spec was
kept (kinds given with --allow are reported but do not fail), else 0.

    nice tests/fuzz/nvrtc_sample.py --fusegen build-cpu/fusegen --seconds 600 \\
        [--seed N] [--out tests/fuzz/nvrtc_failures] [--corpus tests/fuzz/corpus ...] \\
        [--allow spill]

A kept spec replays with `fusegen check --nvrtc FILE`.
"""
import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ARCH_SETS = [["sm_90a"], ["sm_90a"], ["sm_90a"], ["sm_90a", "sm_80"], ["sm_80"], ["sm_86"], ["sm_89"],
             ["sm_90"], ["sm_90a", "sm_86"]]
SIMPLE_OPS = ["scale", "bias", "residual", "relu", "gelu", "silu", "store"]


def rand_tile(r):
    m = r.choice([64, 64, 128, 128, 128, 32, 256])
    n = r.choice([64, 128, 128, 160, 256, 256, 320, 32])
    k = r.choice([64, 64, 64, 32])
    t = {"m": m, "n": n, "k": k, "stages": r.randint(2, 5)}
    if r.random() < 0.15:
        t["schedule"] = r.choice(["cooperative", "pingpong", "auto"])
    return t


def rand_ops(r, stores, allow_norm):
    ops = []
    norm = False
    for _ in range(r.randint(0, 6)):
        if allow_norm and not norm and r.random() < 0.3:
            norm = True
            op = {"op": r.choice(["layernorm", "rmsnorm"])}
            if r.random() < 0.5:
                op["strategy"] = r.choice(["auto", "row", "split", "cluster"])
            if r.random() < 0.2:
                op["affine"] = False
            if r.random() < 0.2:
                op["eps"] = r.choice([1e-5, 1e-6, 1e-3])
            ops.append(op)
            continue
        name = r.choice(SIMPLE_OPS)
        op = {"op": name}
        if name == "scale" and r.random() < 0.7:
            op["alpha"] = r.choice([0.5, 2.0, 0.125, -1.0, 1e-3])
        elif name == "residual" and r.random() < 0.5:
            op["beta"] = r.choice([0.5, 2.0, -1.0])
        elif name == "gelu" and r.random() < 0.5:
            op["approximate"] = "tanh"
        elif name == "store":
            if stores[0] >= 4:
                continue
            stores[0] += 1
            op["as"] = "s%d" % stores[1]
            stores[1] += 1
        ops.append(op)
    if allow_norm and not norm and r.random() < 0.5:
        ops.insert(r.randint(0, len(ops)), {"op": r.choice(["layernorm", "rmsnorm"])})
    return ops


def rand_spec(r, n):
    ab = r.choice(["f16", "bf16"])
    k = {"name": "k", "arch": r.choice(ARCH_SETS), "a": ab, "b": ab,
         "out": r.choice(["f16", "bf16", "bf16", "f32"]),
         "tiles": [rand_tile(r) for _ in range(r.choice([1, 1, 2]))]}
    if r.random() < 0.3:
        k["b_layout"] = "kn"
    stores = [0, 0]
    k["epilogue"] = rand_ops(r, stores, True)
    if r.random() < 0.15:
        k["out"] = ab
        stores2 = [0, stores[1]]
        then = {"epilogue": rand_ops(r, stores2, False)}
        if r.random() < 0.5:
            then["tiles"] = [rand_tile(r)]
        if r.random() < 0.3:
            then["b_layout"] = "kn"
        k["then"] = then
    return json.dumps({"library": "nvs%d" % n, "kernels": [k]}, indent=1) + "\n"


def classify(rc, text):
    if rc not in (0, 1):
        return "crash", "exit status %d" % rc
    if "Registers are spilled" in text:
        return "spill", "register spill"
    m = re.search(r'static assertion failed with "([^"]*)"', text)
    if m:
        return "compile", "static_assert: " + m.group(1)
    m = re.search(r"error: ([^\n]*)", text)
    return "compile", (m.group(1) if m else "unknown failure")[:200]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fusegen", required=True)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvrtc_failures"))
    ap.add_argument("--corpus", action="append", default=[], help="folder of specs to sample from too")
    ap.add_argument("--allow", action="append", default=[], help="kind reported but not failing (spill)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for one spec's NVRTC compile")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    r = random.Random(seed)
    print("nvrtc_sample: seed %d, %g s" % (seed, a.seconds), flush=True)
    corpus = []
    for d in a.corpus:
        corpus += [os.path.join(d, f) for f in sorted(os.listdir(d)) if os.path.getsize(os.path.join(d, f)) < 16384]

    deadline = time.time() + a.seconds
    tried = checked = compiled = 0
    kept = {}   # reason -> [files]
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = os.path.join(tmp, "spec.json")
        n = 0
        while time.time() < deadline:
            n += 1
            if corpus and r.random() < 0.1:
                with open(r.choice(corpus), "rb") as f:
                    data = f.read()
            else:
                data = rand_spec(r, n).encode()
            with open(spec_path, "wb") as f:
                f.write(data)
            tried += 1
            p = subprocess.run([a.fusegen, "check", spec_path], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            if p.returncode != 0:
                continue
            checked += 1
            try:
                p = subprocess.run([a.fusegen, "check", "--nvrtc", spec_path], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=max(1.0, min(a.timeout, deadline - time.time() + 60)))
                rc, text = p.returncode, p.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired:
                continue   # out of time (the last one) or too big to sample: not a finding
            if rc == 0:
                compiled += 1
                continue
            kind, reason = classify(rc, text)
            h = hashlib.sha256(data).hexdigest()[:16]
            folder = os.path.join(a.out, kind)
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, h + ".json"), "wb") as f:
                f.write(data)
            with open(os.path.join(folder, h + ".txt"), "w") as f:
                f.write(text)
            kept.setdefault((kind, reason), []).append(os.path.join(folder, h + ".json"))
            print("CHECKS BUT DOES NOT COMPILE (%s: %s): %s" % (kind, reason, os.path.join(folder, h + ".json")),
                  flush=True)
    print("nvrtc_sample: seed %d: %d specs tried, %d passed check, %d compiled, %d kept" %
          (seed, tried, checked, compiled, sum(len(v) for v in kept.values())))
    for (kind, reason), files in sorted(kept.items()):
        print("  %-8s %4d  %s" % (kind, len(files), reason))
    failing = [k for k in kept if k[0] not in a.allow]
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
