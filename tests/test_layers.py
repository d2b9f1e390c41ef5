"""The package's layers (lower layers never import higher ones), read from the source with ``ast``:
every import statement counts, at module level or inside a function.

The layers are one list, the table of docs/architecture.md: every module of the package is in exactly one row,
and a module imports only from its own row, a row with the same number being a peer it must not import, or a
lower one. Beside the layering, policies: a learner reports what it did and never computes a bound's
statistics (it imports neither the bounds, the statistics nor the certified solvers; the one certified routine
a learner needs to run, the PSD Gram matrix, is in pipeline.numerics); a bound imports no learner, solver or
statistic.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PIPELINE = Path(__file__).resolve().parents[1] / "pipeline"
ARCHITECTURE = PIPELINE.parent / "docs" / "architecture.md"

POLICIES = {  # beside the layering: module prefix -> what it never imports
    "pipeline.learners": ("pipeline.bounds", "pipeline.solvers", "pipeline.job.statistics", "pipeline.job.run"),
    "pipeline.bounds": ("pipeline.learners", "pipeline.solvers", "pipeline.job.statistics", "pipeline.job.run"),
}

ALLOWED = {  # (importing module, imported module) -> why; the list only shrinks
    ("pipeline.learners.multiclass", "pipeline.solvers.multiclass"):
        "MulticlassSVM's training is the certified Crammer-Singer solve itself (regularised loss minimisation, "
        "docs/bounds.md section 7): its comparator and excess come from pipeline.job.statistics like every learner's",
}


def layers() -> list[tuple[str, list[str]]]:
    """The rows of docs/architecture.md's layer table: (layer, its modules as dotted names under pipeline)."""
    rows = []
    for line in ARCHITECTURE.read_text().splitlines():
        m = re.match(r"\| (\d+\. [^|]+?) \| ([^|]+) \|", line)
        if m:
            mods = re.findall(r"`([\w.]+)`", m.group(2))
            rows.append((m.group(1), ["pipeline" if x == "pipeline" else f"pipeline.{x}" for x in mods]))
    return rows


def _module(path: Path) -> str:
    parts = path.relative_to(PIPELINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(PIPELINE.rglob("*.py"))}


def _rank() -> dict[str, tuple[int, str]]:
    return {mod: (int(layer.split(".")[0]), layer) for layer, mods in layers() for mod in mods}


def _imports(path: Path) -> set[str]:
    """Every module an ``import``/``from ... import`` in ``path`` names (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(PIPELINE.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}  # from pipeline import dual -> pipeline.dual
    return out


def _within(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def _target(name: str) -> str | None:
    """The package module an imported name refers to (the longest module prefix), or None outside the package."""
    found = [m for m in MODULES if _within(name, m)]
    return max(found, key=len) if found else None


def test_every_module_is_in_exactly_one_layer_of_the_table() -> None:
    listed = [mod for _, mods in layers() for mod in mods]
    assert len(layers()) >= 9, "docs/architecture.md's layer table was not found"
    assert sorted(m for m in set(listed) if listed.count(m) > 1) == [], "a module in two rows"
    assert sorted(set(MODULES) - set(listed)) == [], "modules of the package no row of docs/architecture.md lists"
    assert sorted(set(listed) - set(MODULES)) == [], "rows of docs/architecture.md list modules that do not exist"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer_or_a_peer(module: str) -> None:
    rank = _rank()
    if module not in rank:
        pytest.skip("not in the table: test_every_module_is_in_exactly_one_layer_of_the_table fails")
    level, layer = rank[module]
    bad = []
    for name in sorted(_imports(MODULES[module])):
        target = _target(name)
        if target is None or target == module or target not in rank or (module, target) in ALLOWED:
            continue
        other, other_layer = rank[target]
        if other > level or (other == level and other_layer != layer):
            bad.append(f"{module} ({layer}) imports {target} ({other_layer})")
        for prefix, forbidden in POLICIES.items():
            if _within(module, prefix) and any(_within(target, f) for f in forbidden):
                bad.append(f"{module} imports {target}: {prefix} never imports {', '.join(forbidden)}")
    assert not bad, bad


def test_the_allowed_exceptions_still_exist() -> None:
    """An exception that is no longer needed is removed from the list (the list only shrinks)."""
    for module, name in ALLOWED:
        assert any(_target(n) == name for n in _imports(MODULES[module])), f"{module} no longer imports {name}"


def test_the_run_loop_reaches_the_solvers_through_the_providers() -> None:
    """pipeline.job.run imports the provider registry, which imports the certified solvers: a job's code identity
    (pipeline.job.identity, the import closure of pipeline.job.run) includes them."""
    assert "pipeline.job.statistics" in _imports(PIPELINE / "job" / "run.py")
    assert {"pipeline.solvers.dual", "pipeline.solvers.multiclass", "pipeline.solvers.comparators"} <= {
        n for n in _imports(PIPELINE / "job" / "statistics.py") if n.startswith("pipeline.solvers.")}
    assert not any(n.startswith("pipeline.solvers") for n in _imports(PIPELINE / "job" / "run.py"))  # only through the registry


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted: the import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_in_the_package_or_the_benchmarks() -> None:
    """No two modules import each other, directly or through others (every import counts, inside functions
    too): the package's and the benchmark scripts'. A circle means neither side can be read, tested or changed
    without the other; the layer table alone allows one inside a row."""
    graph = {mod: {t for name in _imports(path) if (t := _target(name)) and t != mod} for mod, path in MODULES.items()}
    assert _cycles(graph) == []
    scripts = {p.stem: p for p in (PIPELINE.parent / "benchmarks").glob("*.py")}
    bench = {name: {n for n in _imports(path) if n in scripts and n != name} for name, path in scripts.items()}
    assert _cycles(bench) == []


LONGEST = 80  # lines of a function in pipeline/, the compiled kernels included (docstring and nested functions counted)


def test_every_function_in_the_package_is_at_most_80_lines() -> None:
    """A function longer than a screen is split into named steps (issue: the house, round four): every ``def``
    in pipeline/, from its line to its last, nested functions counted in their parent, is at most 80 lines."""
    long = []
    for path in sorted(PIPELINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LONGEST:
                    long.append(f"{path.relative_to(PIPELINE.parent)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "\n".join(long)
