"""Bounds as data: each theorem is a record naming its learner, guarantee type, the statistics it needs,
its reference and its formula. Bounds read only the certified statistics they declare (docs/bounds.md).

One module per family of theorems; ``BOUNDS`` lists them all.
"""

from __future__ import annotations

from pipeline.bounds.base import Bound, Stats
from pipeline.bounds.finite import FINITE_BOUNDS
from pipeline.bounds.multiclass import MULTICLASS_BOUNDS
from pipeline.bounds.pegasos import PEGASOS_BOUNDS, pegasos_bounds
from pipeline.bounds.perceptron import FREUND_SCHAPIRE, HINGE, NOVIKOFF, PERCEPTRON_BOUNDS

BOUNDS: tuple[Bound, ...] = (*PERCEPTRON_BOUNDS, *PEGASOS_BOUNDS, *pegasos_bounds("kernel_pegasos", "kernel_"), *FINITE_BOUNDS,
                           *MULTICLASS_BOUNDS)


def bounds_for(learner: str) -> tuple[Bound, ...]:
    """Every bound that speaks about ``learner``."""
    return tuple(b for b in BOUNDS if b.learner == learner)


__all__ = ["BOUNDS", "FREUND_SCHAPIRE", "HINGE", "NOVIKOFF", "Bound", "Stats", "bounds_for"]
