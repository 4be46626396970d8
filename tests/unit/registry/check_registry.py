"""Compares the registry (runtime/fusegen_registry.h, printed by registry_dump) with the copies
that cannot include a C header: the Python bindings' constants
(integrations/pytorch/fusegen_torch/_capi.py) and the JSON schema's enums (specs/schema.json).
The generated device headers need no comparison: emit.c writes their enums from the registry.

usage: python3 check_registry.py REGISTRY_DUMP SOURCE_DIR
Prints every difference and exits 1 when there is one, 0 when all agree."""

import importlib.util
import json
import os
import subprocess
import sys


def load_capi(src):
    path = os.path.join(src, "integrations", "pytorch", "fusegen_torch", "_capi.py")
    spec = importlib.util.spec_from_file_location("fusegen_capi_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)   # ctypes only: no torch, no GPU
    return mod


def main():
    dump, src = sys.argv[1], sys.argv[2]
    rows = [line.split() for line in subprocess.run([dump], check=True, capture_output=True,
                                                    text=True).stdout.splitlines()]
    reg = {}
    for r in rows:
        reg.setdefault(r[0], []).append(r[1:])
    limit = {r[0]: int(r[1]) for r in reg["limit"]}
    errors = []

    def same(what, got, want):
        if got != want:
            errors.append(f"{what}: {got!r}, but the registry says {want!r}")

    # ---- the Python bindings ----
    capi = load_capi(src)
    same("_capi.FUSEGEN_MAX_STORES", capi.FUSEGEN_MAX_STORES, limit["max_stores"])
    for ident, word, value, _ in reg["dtype"]:
        same(f"_capi.DTYPE_{ident}", getattr(capi, f"DTYPE_{ident}", None), int(value))
        same(f"_capi.DTYPE_NAMES[{value}]", capi.DTYPE_NAMES.get(int(value)), word)
    same("_capi.DTYPE_NAMES", len(capi.DTYPE_NAMES), len(reg["dtype"]))
    for ident, word, value in reg["layout"]:
        same(f"_capi.LAYOUT_{ident}", getattr(capi, f"LAYOUT_{ident}", None), int(value))
        same(f"_capi.LAYOUT_NAMES[{value}]", capi.LAYOUT_NAMES.get(int(value)), word)
    for ident, word, value in reg["norm"]:
        same(f"_capi.NORM_{ident}", getattr(capi, f"NORM_{ident}", None), int(value))
        same(f"_capi.NORM_NAMES[{value}]", capi.NORM_NAMES.get(int(value)), word)
    for _, public, word, value in reg["strategy"]:
        same(f"_capi.STRATEGY_{public}", getattr(capi, f"STRATEGY_{public}", None), int(value))
    same("_capi.STRATEGY_NAMES", len(capi.STRATEGY_NAMES), len(reg["strategy"]))
    for ident, token, _, value, *_ in reg["op"]:
        same(f"_capi.OP_{ident}", getattr(capi, f"OP_{ident}", None), int(value))
        same(f"_capi.OP_NAMES[{value}]", capi.OP_NAMES.get(int(value)), token)
    same("_capi.OP_NAMES", len(capi.OP_NAMES), len(reg["op"]))
    for ident, public, word, value in reg["schedule"]:
        same(f"_capi.SCHEDULE_{public}", getattr(capi, f"SCHEDULE_{public}", None), int(value))
    same("_capi.SCHEDULE_NAMES", len(capi.SCHEDULE_NAMES), len(reg["schedule"]))
    for ident, word, value in reg["family"]:
        same(f"_capi.FAMILY_{ident}", getattr(capi, f"FAMILY_{ident}", None), int(value))
        same(f"_capi.FAMILY_NAMES[{value}]", capi.FAMILY_NAMES.get(int(value)), word)
    same("_capi.FAMILY_NAMES", len(capi.FAMILY_NAMES), len(reg["family"]))

    # ---- the JSON schema ----
    with open(os.path.join(src, "specs", "schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    defs = schema["$defs"]
    kernel = defs["kernel"]["properties"]
    same("schema arch", defs["arch"]["enum"], [r[1] for r in reg["arch"]])
    same("schema operand", defs["operand"]["enum"], [r[1] for r in reg["dtype"] if r[3] == "2"])
    same("schema out", kernel["out"]["enum"], [r[1] for r in reg["dtype"]])
    same("schema layout", defs["layout"]["enum"], [r[1] for r in reg["layout"]])
    tile = defs["tile"]["properties"]
    same("schema tile m", tile["m"]["enum"], [int(r[0]) for r in reg["tile_m"]])
    same("schema tile n", tile["n"]["enum"],
         sorted(int(r[0]) for r in reg["tile_n"] + reg["tile_n_sm90"]))
    same("schema tile k", tile["k"]["enum"], [int(r[0]) for r in reg["tile_k"]])
    same("schema stages minimum", tile["stages"]["minimum"], limit["min_stages"])
    same("schema stages maximum", tile["stages"]["maximum"], limit["sm90_max_stages"])
    same("schema schedule", tile["schedule"]["enum"], [r[2] for r in reg["schedule"]])
    same("schema strategy", defs["strategy"]["enum"], [r[2] for r in reg["strategy"]])
    spelled = [r for r in reg["op"] if r[1] == r[2]]   # the ops a spec names by their word
    same("schema op", defs["op"]["properties"]["op"]["enum"], [r[2] for r in spelled])
    # each op's branch of oneOf: its constant's key and default
    for ident, token, word, value, cls, key, dflt in spelled:
        branches = [b for b in defs["op"]["oneOf"]
                    if b["properties"]["op"].get("const") == word
                    or word in b["properties"]["op"].get("enum", [])]
        if len(branches) != 1:
            errors.append(f"schema op: {len(branches)} oneOf branches for '{word}', expected 1")
            continue
        props = branches[0]["properties"]
        if key == "-":
            continue
        if key not in props:
            errors.append(f"schema op '{word}': no key '{key}'")
            continue
        same(f"schema op '{word}' {key} default", float(props[key].get("default", "nan")), float(dflt))
    same("schema kernels maxItems", schema["properties"]["kernels"]["maxItems"], limit["max_kernels"])
    same("schema tiles maxItems", defs["tiles"]["maxItems"], limit["max_tiles"])
    same("schema epilogue maxItems", defs["epilogue"]["maxItems"], limit["max_ops"])
    same("schema arch maxItems", kernel["arch"]["maxItems"], limit["max_archs"])
    same("schema name maxLength", defs["name"]["maxLength"], limit["max_name"])

    for e in errors:
        print(e)
    print(f"{len(errors)} difference(s) from the registry")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
