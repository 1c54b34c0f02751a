#!/usr/bin/env python3
"""Prints the workspace's crate graph (normal dependencies between its own
crates) from `cargo metadata`, in layer order, and fails if a crate depends on
one listed above it in ARCHITECTURE.md's order. Cargo already refuses a cycle;
this also holds the order the document states."""
import json
import subprocess
import sys

ORDER = ["grid-kernels", "grid-core", "grid-methods", "grid-cache", "grid-report", "grid-pipeline", "grid"]

meta = json.loads(subprocess.check_output(["cargo", "metadata", "--no-deps", "--format-version", "1"]))
own = {p["name"]: p for p in meta["packages"]}
unknown = sorted(set(own) - set(ORDER))
if unknown:
    sys.exit(f"crates missing from the layer order: {unknown}")
bad = []
for name in ORDER:
    deps = sorted(
        {d["name"] for d in own[name]["dependencies"] if d["name"] in own and d.get("kind") in (None, "normal")}
    )
    print(f"{name:14} -> {', '.join(deps) if deps else '(none)'}")
    bad += [f"{name} -> {d}" for d in deps if ORDER.index(d) >= ORDER.index(name)]
if bad:
    sys.exit("upward dependencies: " + "; ".join(bad))
