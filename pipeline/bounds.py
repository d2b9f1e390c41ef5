"""Bounds as data: each theorem is a record naming its learner, guarantee type, the statistics it needs,
its reference and its formula. Bounds read only the certified statistics they declare (BOUNDS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

_U = 2.0**-53

Stats = Mapping[str, Any]


@dataclass(frozen=True)
class Bound:
    """A guarantee on an empirical quantity of one learner.

    Attributes
    ----------
    name : short identifier, used in metric names.
    learner : name of the learner it applies to.
    guarantee : "D" (every run), "E" (in expectation) or "P" (with high probability).
    quantity : name of the empirical quantity it bounds (a key of ``learner.quantities``).
    requires : statistics read by ``formula`` and ``applies``.
    reference : where the theorem is stated.
    formula : the bound as text, in the names of the statistics.
    value : statistics -> value of the bound.
    applies : statistics -> None if the bound applies, else the reason it does not.
    """

    name: str
    learner: str
    guarantee: str
    quantity: str
    requires: tuple[str, ...]
    reference: str
    formula: str
    value: Callable[[Stats], float]
    applies: Callable[[Stats], str | None] = field(default=lambda s: None)

    def evaluate(self, stats: Stats, empirical: Mapping[str, float]) -> dict[str, Any]:
        """One row of the results table: the bound next to the measured quantity."""
        missing = [k for k in self.requires if k not in stats]
        if missing:
            raise KeyError(f"bound {self.name} needs statistics {missing}")
        declared = {k: stats[k] for k in self.requires}  # a bound sees only what it declares
        measured = empirical[self.quantity]
        row = {
            "bound": self.name,
            "guarantee": self.guarantee,
            "quantity": self.quantity,
            "empirical": float(measured),
            "formula": self.formula,
            "reference": self.reference,
        }
        reason = self.applies(declared)
        if reason is not None:
            return row | {"theoretical": math.nan, "ratio": math.nan, "holds": None, "applicable": False, "reason": reason}
        theoretical = float(self.value(declared))
        ratio = measured / theoretical if theoretical > 0 else (0.0 if measured == 0 else math.inf)
        return row | {
            "theoretical": theoretical,
            "ratio": float(ratio),
            "holds": bool(measured <= theoretical),
            "applicable": True,
            "reason": "",
        }


def _novikoff(s: Stats) -> float:
    # R is a rigorous upper bound and gamma_lo a rigorous lower bound (pipeline.data), so
    # (R/gamma_lo)^2 >= (R*/gamma*)^2 exactly; the factor covers the rounding of the division and the
    # square, so the floor never drops below the exact bound's floor (a tight case stays tight).
    return math.floor((s["R"] / s["gamma_lo"]) ** 2 * (1.0 + 8.0 * _U))


NOVIKOFF = Bound(
    name="novikoff",
    learner="perceptron",
    guarantee="D",
    quantity="mistakes",
    requires=("R", "gamma_lo", "separable"),
    reference="Novikoff 1962; [S2] Thm 2; [S1] slide 6; BOUNDS.md section 1",
    formula="floor((R/gamma_lo)^2)",
    value=_novikoff,
    applies=lambda s: None if s["separable"] else "data not certified separable (gamma_lo <= 0)",
)

BOUNDS: tuple[Bound, ...] = (NOVIKOFF,)


def bounds_for(learner: str) -> tuple[Bound, ...]:
    """Every bound that speaks about ``learner``."""
    return tuple(b for b in BOUNDS if b.learner == learner)
