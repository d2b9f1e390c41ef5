"""The guarantee types as records: what each one promises, how a setting of it is judged, what its rows say,
which figures draw it and whether more seeds can decide it (docs/bounds.md section 9).

A bound declares its type by its code (``Bound.guarantee``: "D", "E", "P" or "-"), and the results table keeps
the code in its ``guarantee`` column; everything that depends on the type asks the record
(:func:`guarantee`, or the code sets :data:`PER_RUN`, :data:`OVER_SEEDS`, ... for a table's column), never the
letter. A new guarantee type is one record here, and :data:`GUARANTEES` lists every one.
Nothing here imports the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Guarantee:
    """One guarantee type.

    code : the letter a bound declares and the results table holds.
    name : in words, for the report and the docs.
    judged_as : how a setting is judged: "every run" (one run above the bound is a violation), "the mean" (a
        test of the mean over the seeds, with the quantity's range), "the violation rate" (each run within or
        above its bound, the rate over the seeds against delta) or "not judged" (reported only).
    """

    code: str
    name: str
    judged_as: str

    @property
    def per_run(self) -> bool:
        """Every run must satisfy it: a run above its bound is a violation, whatever the others do."""
        return self.judged_as == "every run"

    @property
    def on_the_mean(self) -> bool:
        """A statement about the mean over seeds (the rate figure against T, m or n draws it)."""
        return self.judged_as == "the mean"

    @property
    def on_the_rate(self) -> bool:
        """A statement about the rate of runs above their bound, against delta (each run is counted, not drawn)."""
        return self.judged_as == "the violation rate"

    @property
    def over_seeds(self) -> bool:
        """Decided over the seeds of a setting: more seeds can decide it, and its verdict carries a design."""
        return self.on_the_mean or self.on_the_rate

    @property
    def judged(self) -> bool:
        return self.judged_as != "not judged"

    @property
    def drawn(self) -> bool:
        """Its measured values are drawn against the bound (curves over t, heatmaps, comparisons): (D) and (E)."""
        return self.per_run or self.on_the_mean

    def row_words(self, row: Any) -> str:
        """One row's verdict words in a job's log line (the vacuous note aside: ``pipeline.judging.rows``)."""
        if self.per_run:
            words = "holds" if row.holds else "VIOLATED"
            if getattr(row, "judged_at", "") and row.judged_at != "T only":
                words += f" at {row.judged_at}"
            return words
        if self.on_the_mean:
            return f"{self.code}: judged over seeds"
        if self.on_the_rate:
            return f"{self.code}: " + ("within" if row.holds else "above") + " the bound, counted against delta"
        return self.code


DETERMINISTIC = Guarantee("D", "deterministic (in every run)", "every run")
EXPECTATION = Guarantee("E", "in expectation (the mean over seeds)", "the mean")
HIGH_PROBABILITY = Guarantee("P", "with high probability (all but a fraction delta of runs)", "the violation rate")
REPORTED = Guarantee("-", "reported, never judged", "not judged")

GUARANTEES: dict[str, Guarantee] = {g.code: g for g in (DETERMINISTIC, EXPECTATION, HIGH_PROBABILITY, REPORTED)}

_UNKNOWN: dict[str, Guarantee] = {}


def guarantee(code: Any) -> Guarantee:
    """The record of ``code``; an unknown code is a type that is not judged (its record names the code)."""
    found = GUARANTEES.get(str(code))
    if found is not None:
        return found
    return _UNKNOWN.setdefault(str(code), Guarantee(str(code), f"unknown guarantee type {code!r}", "not judged"))


def codes(attribute: str) -> tuple[str, ...]:
    """The codes whose record has ``attribute`` (a property above): for a table's ``guarantee`` column,
    ``table["guarantee"].isin(codes("per_run"))``."""
    return tuple(c for c, g in GUARANTEES.items() if getattr(g, attribute))


PER_RUN = codes("per_run")  # ("D",)
ON_THE_MEAN = codes("on_the_mean")  # ("E",)
ON_THE_RATE = codes("on_the_rate")  # ("P",)
OVER_SEEDS = codes("over_seeds")  # ("E", "P")
DRAWN = codes("drawn")  # ("D", "E")

__all__ = ["DETERMINISTIC", "DRAWN", "EXPECTATION", "GUARANTEES", "HIGH_PROBABILITY", "ON_THE_MEAN", "ON_THE_RATE",
           "OVER_SEEDS", "PER_RUN", "REPORTED", "Guarantee", "codes", "guarantee"]
