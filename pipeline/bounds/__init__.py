"""Bounds as data: each theorem is a record naming its learner, guarantee type, the statistics it needs,
its reference and its formula. Bounds read only the certified statistics they declare (docs/bounds.md).

One module per family of theorems, each registered under the ``boundlab.bounds`` entry points
(pyproject.toml), as installed plug-ins register theirs (:mod:`pipeline.plugins`, docs/plugins.md).
``BOUNDS`` lists them all, built-ins first; ``bounds_for(learner)`` those of one learner.
"""

from __future__ import annotations

from typing import Any

from pipeline.bounds.base import Bound, Stats
from pipeline.bounds.finite import FINITE_BOUNDS
from pipeline.bounds.multiclass import MULTICLASS_BOUNDS
from pipeline.bounds.pegasos import PEGASOS_BOUNDS, pegasos_bounds
from pipeline.bounds.perceptron import FREUND_SCHAPIRE, HINGE, NOVIKOFF, PERCEPTRON_BOUNDS
from pipeline.bounds.registry import bounds_for

KERNEL_PEGASOS_BOUNDS: tuple[Bound, ...] = pegasos_bounds("kernel_pegasos", "kernel_")


def __getattr__(name: str) -> Any:
    if name == "BOUNDS":  # every registered bound (imports the bound plug-ins: on first use, not at import)
        from pipeline.plugins import BOUNDS as registry  # noqa: N811 - the registry object, not a constant

        return registry.all()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BOUNDS", "FINITE_BOUNDS", "FREUND_SCHAPIRE", "HINGE", "KERNEL_PEGASOS_BOUNDS", "MULTICLASS_BOUNDS", "NOVIKOFF",
           "PEGASOS_BOUNDS", "PERCEPTRON_BOUNDS", "Bound", "Stats", "bounds_for"]
