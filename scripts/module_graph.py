#!/usr/bin/env python3
"""Prints each crate's graph of top-level modules (who names whom, outside
tests) and fails on a circle that is not one of the known ones below, or on a
known one that has grown. Cargo keeps the crates in layers (crate_graph.py);
inside a crate nothing does, so this does (issue 62).

A module `a` depends on `b` when a file under `a` names `crate::b` (in a
path or a `use`, braces included) or reaches `b` through `super::`. Code after
a file's `#[cfg(test)]` module, files named `tests.rs` and modules declared
under `#[cfg(test)]` (`#[cfg(test)] mod fixture_check;`) are left out: a test
may import what it checks. A name the crate only re-exports from a lower
crate (`pub(crate) use grid_core::model`) is not one of its modules.

    python3 scripts/module_graph.py            # the circles, then the check
    python3 scripts/module_graph.py --edges    # every edge, with a file that makes it
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = {"grid": ROOT / "src", **{p.name: p / "src" for p in sorted((ROOT / "crates").iterdir()) if (p / "src").is_dir()}}

# The circles there were when the check came (issue 62; grid-report's
# {compare, images} was broken by it); each is to be broken, and this list
# shrinks with it. A circle that is not a subset of one of these fails the
# check, and so does a known one that is gone (so that the list stays true).
KNOWN: dict[str, list[set[str]]] = {}


def top_level_modules(src: Path) -> set[str]:
    names = set()
    for entry in src.iterdir():
        if entry.is_dir() and ((entry / "mod.rs").exists() or (src / f"{entry.name}.rs").exists()):
            names.add(entry.name)
        elif entry.suffix == ".rs" and entry.stem not in ("lib", "main"):
            names.add(entry.stem)
    return names


def module_path(src: Path, file: Path) -> list[str]:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def production_text(text: str) -> str:
    cut = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
    return text[: cut.start()] if cut else text


def braced_names(text: str, start: int) -> list[str]:
    """The first segment of each path inside `{…}` starting at `start`."""
    depth, i, names, token = 0, start, [], ""
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
            if depth == 1:
                token = ""
        elif c == "}":
            depth -= 1
            if depth == 0:
                names.append(token)
                break
        elif c == "," and depth == 1:
            names.append(token)
            token = ""
        elif depth == 1:
            token += c
        i += 1
    firsts = []
    for name in names:
        name = name.strip()
        if name:
            firsts.append(re.split(r"::|\s", name)[0])
    return firsts


def references(text: str, path: list[str], modules: set[str]) -> set[str]:
    found = set()
    text = re.sub(r"//[^\n]*", "", text)
    for m in re.finditer(r"\bcrate::(\{|\w+)", text):
        names = braced_names(text, m.start(1)) if m.group(1) == "{" else [m.group(1)]
        found.update(n for n in names if n in modules)
    for m in re.finditer(r"\b((?:super::)+)(\{|\w+)", text):
        ups = m.group(1).count("super::")
        base = path[: len(path) - ups]
        if len(base) == 0:
            names = braced_names(text, m.start(2)) if m.group(2) == "{" else [m.group(2)]
            found.update(n for n in names if n in modules)
    return found


def test_only_modules(src: Path) -> set[tuple[str, ...]]:
    """Module paths declared under `#[cfg(test)]` (`#[cfg(test)] mod name;`):
    test code in a file of its own."""
    found = set()
    for file in src.rglob("*.rs"):
        for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", file.read_text()):
            found.add(tuple(module_path(src, file) + [m.group(1)]))
    return found


def graph(src: Path) -> tuple[set[str], dict[str, dict[str, str]]]:
    modules = top_level_modules(src)
    edges: dict[str, dict[str, str]] = {m: {} for m in modules}
    tests_only = test_only_modules(src)
    for file in sorted(src.rglob("*.rs")):
        if file.name == "tests.rs":
            continue
        path = module_path(src, file)
        if not path or path[0] not in modules:
            continue
        if any(tuple(path[: i + 1]) in tests_only for i in range(len(path))):
            continue
        for target in references(production_text(file.read_text()), path, modules):
            if target != path[0]:
                edges[path[0]].setdefault(target, str(file.relative_to(ROOT)))
    return modules, edges


def circles(modules: set[str], edges: dict[str, dict[str, str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    sys.setrecursionlimit(10_000)
    for v in sorted(modules):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    show_edges = "--edges" in sys.argv[1:]
    failures = []
    for crate, src in CRATES.items():
        modules, edges = graph(src)
        found = circles(modules, edges)
        if show_edges:
            for a in sorted(edges):
                for b, file in sorted(edges[a].items()):
                    print(f"{crate}: {a} -> {b}  ({file})")
        for component in found:
            share = 100 * len(component) / len(modules)
            inside = [f"{a}->{b}" for a in sorted(component) for b in sorted(edges[a]) if b in component]
            known = any(component <= k for k in KNOWN.get(crate, []))
            mark = "known" if known else "NEW"
            print(f"{crate}: circle {{{', '.join(sorted(component))}}} ({share:.0f}% of its modules, {mark}): {', '.join(inside)}")
            if not known:
                failures.append(f"{crate}: {sorted(component)}")
        if not found:
            print(f"{crate}: no circle ({len(modules)} modules)")
        for k in KNOWN.get(crate, []):
            if not any(k & c for c in found):
                failures.append(f"{crate}: the known circle {sorted(k)} is gone: take it out of KNOWN")
    if failures:
        print("module graph: " + "; ".join(failures) + " (ARCHITECTURE.md, issue 62)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
