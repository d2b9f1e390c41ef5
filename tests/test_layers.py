"""The package's layers (lower layers never import higher ones), read from the source with ``ast``:
every import statement counts, at module level or inside a function.

data < learners < statistics (the providers, over pipeline.solvers) < run; bounds are data beside the learners.
A learner reports what it did and never computes a bound's statistics: it imports neither the bounds nor the
certified solvers (the one certified routine a learner needs to run, the PSD Gram matrix, is in
pipeline.numerics, below it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PIPELINE = Path(__file__).resolve().parents[1] / "pipeline"

# (layer, modules it must never import)
RULES = {
    "learners": ("pipeline.bounds", "pipeline.solvers", "pipeline.statistics", "pipeline.run"),
    "data": ("pipeline.learners", "pipeline.bounds", "pipeline.solvers", "pipeline.statistics", "pipeline.run"),
    "bounds": ("pipeline.learners", "pipeline.solvers", "pipeline.statistics", "pipeline.run"),
    "solvers": ("pipeline.learners", "pipeline.bounds", "pipeline.statistics", "pipeline.run"),
    "numerics.py": ("pipeline.data", "pipeline.learners", "pipeline.bounds", "pipeline.solvers", "pipeline.statistics",
                    "pipeline.run"),
    "progress.py": ("pipeline.data", "pipeline.learners", "pipeline.bounds", "pipeline.solvers", "pipeline.statistics",
                    "pipeline.run"),
    "interrupts.py": ("pipeline",),  # the signal handlers' foundation: loaded by the command before anything else
    "files.py": ("pipeline",),  # how every kept file is written: below everything that keeps one
    "risk.py": ("pipeline.data", "pipeline.learners", "pipeline.bounds", "pipeline.solvers", "pipeline.statistics",
                "pipeline.run"),
}

# Known exceptions, each with its reason: (file, imported module) -> why.
ALLOWED = {
    ("learners/multiclass.py", "pipeline.solvers.multiclass"):
        "MulticlassSVM's training is the certified Crammer-Singer solve itself (regularised loss minimisation, "
        "docs/bounds.md section 7): its comparator and excess come from pipeline.statistics like every learner's",
    ("data/worst_case.py", "pipeline.solvers.perceptron_worst"):
        "the sample is the margin SDP's solution itself (docs/bounds.md section 1, 'The exact worst case'); the "
        "solver imports nothing of the project",
}


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


def _files(layer: str) -> list[Path]:
    target = PIPELINE / layer
    return sorted(target.rglob("*.py")) if target.is_dir() else [target]


@pytest.mark.parametrize("layer", sorted(RULES))
def test_lower_layers_never_import_higher_ones(layer: str) -> None:
    bad = []
    for path in _files(layer):
        rel = path.relative_to(PIPELINE).as_posix()
        for name in sorted(_imports(path)):
            for forbidden in RULES[layer]:
                if _within(name, forbidden) and not any(r == rel and _within(name, m) for r, m in ALLOWED):
                    bad.append(f"{rel} imports {name}")
    assert not bad, bad


def test_the_allowed_exceptions_still_exist() -> None:
    """An exception that is no longer needed is removed from the list (the list only shrinks)."""
    for rel, name in ALLOWED:
        assert name in _imports(PIPELINE / rel), f"{rel} no longer imports {name}: remove it from ALLOWED"


def test_the_run_loop_reaches_the_solvers_through_the_providers() -> None:
    """pipeline.run imports the provider registry, which imports the certified solvers: a job's code identity
    (pipeline.resume, the import closure of pipeline.run) includes them."""
    assert "pipeline.statistics" in _imports(PIPELINE / "run.py")
    assert {"pipeline.solvers.dual", "pipeline.solvers.multiclass", "pipeline.solvers.comparators"} <= {
        n for n in _imports(PIPELINE / "statistics.py") if n.startswith("pipeline.solvers.")}
    assert not any(n.startswith("pipeline.solvers") for n in _imports(PIPELINE / "run.py"))  # only through the registry
