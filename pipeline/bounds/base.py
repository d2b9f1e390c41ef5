"""A bound as data: the theorem's learner, guarantee type, the statistics it reads, reference and formula."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from pipeline._rounding import U as _U

Stats = Mapping[str, Any]


@dataclass(frozen=True)
class Bound:
    """A guarantee on an empirical quantity of one learner.

    Attributes
    ----------
    name : short identifier, used in metric names.
    title : the name a reader knows it by (figures, reports).
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
    title: str
    learner: str
    guarantee: str
    quantity: str
    requires: tuple[str, ...]
    reference: str
    formula: str
    value: Callable[[Stats], float]
    applies: Callable[[Stats], str | None] = field(default=lambda s: None)
    note: Callable[[Stats], str | None] = field(default=lambda s: None)
    curve: Callable[[Stats, Any], Any] | None = None
    """``value`` may return (value, comparator): the comparator that attained a minimised bound.
    ``note`` flags an applicable bound (e.g. vacuous); ``curve(stats, t)`` is the bound after step t, for
    bounds that are anytime statements about prefixes of the run."""

    def curve_of(self, stats: Stats, t: Any) -> Any:
        """The bound after each step of ``t``, or None (no curve, or the bound does not apply)."""
        declared = {k: stats[k] for k in self.requires}
        if self.curve is None or self.applies(declared) is not None:
            return None
        return self.curve(declared, t)

    def evaluate(self, stats: Stats, empirical: Mapping[str, float]) -> dict[str, Any]:
        """One row of the results table: the bound next to the measured quantity."""
        missing = [k for k in self.requires if k not in stats]
        if missing:
            raise KeyError(f"bound {self.name} needs statistics {missing}")
        declared = {k: stats[k] for k in self.requires}  # a bound sees only what it declares
        measured = empirical[self.quantity]
        row = {
            "bound": self.name,
            "title": self.title,
            "guarantee": self.guarantee,
            "quantity": self.quantity,
            "empirical": float(measured),
            "formula": self.formula,
            "reference": self.reference,
        }
        reason = self.applies(declared)
        if reason is not None:
            return row | {"theoretical": math.nan, "ratio": math.nan, "holds": None, "applicable": False,
                          "reason": reason, "comparator": ""}
        value = self.value(declared)
        theoretical, comparator = value if isinstance(value, tuple) else (value, "")
        theoretical = float(theoretical)
        ratio = measured / theoretical if theoretical > 0 else (0.0 if measured == 0 else math.inf)
        return row | {
            "theoretical": theoretical,
            "ratio": float(ratio),
            "holds": bool(measured <= theoretical),
            "applicable": True,
            "reason": self.note(declared) or "",
            "comparator": comparator,
        }
