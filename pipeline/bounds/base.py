"""A bound as data: the theorem's learner, guarantee type, the statistics it reads, reference and formula."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from pipeline.judging.guarantees import guarantee as kind_of
from pipeline.judging.rows import judge_row

Stats = Mapping[str, Any]


class ImpossibleValue(ValueError):
    """A run's value that no correct learner or bound produces (a quantity that is not a finite number, a bound
    that is not a number, a measurement outside its declared range): the run is wrong, not evidence, and fails
    naming the learner or the bound."""


class RangeError(ImpossibleValue):
    """A measured quantity outside the range its bound declares."""


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
    trivial : statistics -> the *trivial value* of the quantity: what a learner that never learns
        measures (w = w_1 throughout), or where that is not defined the quantity's largest possible
        value; the bound is informative only below it (docs/bounds.md, each section).
    trivial_text : that value in words, for the report and docs/bounds.md.
    anytime : how the steps of a run are judged: "trace" (the bound holds at every step t with its
        parameters fixed in advance; judged at every t from the learner's per-step ``Outcome.steps``
        and ``curve``), "monotone" (the quantity never decreases and the bound does not depend on t,
        so the last step is the worst prefix) or "" (judged at the last step T only: the bound's
        constants are tuned to T, or it speaks only of the end of the run).
    range : statistics -> (lo, hi), the range the quantity's true value lies in by the theory (a count in
        [0, T], a suboptimality >= 0; an end may be infinite); None when unknown. The (E) verdict needs hi to
        show "holds" and lo to show "violated" (pipeline.judging.limits); every measurement is checked against it.
    quantity_low : the learner's quantity that is a lower estimate of ``quantity`` (e.g. measured
        against the upper end of a comparator's bracket); "" when ``quantity`` is exact. ``quantity`` is
        the upper estimate a bound must clear to hold; ``quantity_low`` the one that must exceed the
        bound for a violation to be claimed (docs/bounds.md section 9).
    beside : statistics shown beside the bound in its rows and never read by ``formula`` (the exact worst case
        of the bound's own game, e.g. Halving's ``game_value``): computed by the providers like ``requires``,
        but a run where one is missing (a class too large to search) is judged all the same.
    failure : statistics -> the probability with which a (P) bound may fail in a run, when it is not the
        run's ``delta`` (e.g. 1/2 + delta for P11 Lemma 3); the (P) verdict judges the violation rate against it.
    allowance : statistics -> the rounding allowance included in ``value`` (a realised bound that can be
        an identity, e.g. the telescoped Lemma 1). A run whose bound exceeds its measurement by at most twice
        the allowance is an identity up to rounding: a consistency check, reported with its gap against the
        allowance, and never informative evidence (docs/bounds.md section 9).
    """

    name: str
    title: str
    learner: str
    guarantee: str
    quantity: str
    requires: tuple[str, ...]
    reference: str
    formula: str
    value: Callable[[Stats], float | tuple[float, str]]
    applies: Callable[[Stats], str | None] = field(default=lambda s: None)
    note: Callable[[Stats], str | None] = field(default=lambda s: None)
    curve: Callable[[Stats, Any], Any] | None = None
    trivial: Callable[[Stats], float] = field(default=lambda s: math.nan)
    trivial_text: str = ""
    anytime: str = ""
    range: Callable[[Stats], tuple[float, float]] | None = None
    quantity_low: str = ""
    allowance: Callable[[Stats], float] | None = None
    failure: Callable[[Stats], float] | None = None
    beside: tuple[str, ...] = ()
    """``value`` may return (value, comparator): the comparator that attained a minimised bound.
    ``note`` flags an applicable bound (e.g. vacuous); ``curve(stats, t)`` is the bound after step t, for
    bounds that are anytime statements about prefixes of the run."""

    def curve_of(self, stats: Stats, t: Any, steps: Mapping[str, Any] | None = None) -> Any:
        """The bound after each step of ``t``, or None (no curve, or the bound does not apply): the curve
        :meth:`evaluate` judges, drawn at the steps ``t`` (1-based). A statistic the run gives per step
        (``steps``, entry t-1 after step t, e.g. Lemma 14.1's running sum of ||v_t||^2) is read at each t,
        never its final value: the one writer of a bound's curve (the plots draw it as it is)."""
        declared = {k: stats[k] for k in self.requires}
        if self.curve is None or self.applies(declared) is not None:
            return None
        t = np.asarray(t)
        at_t = {k: np.asarray(steps[k])[t - 1] for k in declared if steps is not None and k in steps}
        return self.curve(declared | at_t | {"T": t}, t)

    @property
    def judged_at(self) -> str:
        """Which steps of a run the verdict covers, in words (the ``judged_at`` column)."""
        return {"trace": "every t", "monotone": "every t (last step worst)"}.get(self.anytime, "T only")

    def check_range(self, up: float, low: float, lo: float, hi: float) -> None:
        """Raise :class:`RangeError` when a measurement contradicts the range the bound declares for its
        quantity: an exact value outside [lo, hi], or an upper estimate below lo or a lower estimate above hi
        (the true value lies between the two estimates and inside the range). A verdict is never drawn from
        such a run: the job fails, naming the bound, the range and the value (docs/bounds.md section 9)."""
        lo = -math.inf if math.isnan(lo) else lo
        hi = math.inf if math.isnan(hi) else hi
        if math.isnan(up) or math.isnan(low):
            return
        exact = not self.quantity_low
        bad = (up < lo or up > hi) if exact else (up < lo or low > hi)
        if bad:
            value = f"{up:.10g}" if exact else f"in [{low:.10g}, {up:.10g}] (its lower and upper estimates)"
            raise RangeError(f"bound {self.name}: the measured {self.quantity} is {value}, outside the range "
                             f"[{lo:g}, {hi:g}] the bound declares for it: a bug in the learner or in the bound's range")

    def failure_probability(self, declared: Stats, stats: Stats) -> float:
        """The probability with which this bound may fail in a run: its ``failure`` where it declares one, else
        for a (P) bound the run's ``delta`` (NaN when neither is given). Raise :class:`ImpossibleValue`, naming
        the bound, for one that is not a probability (NaN, below 0 or above 1): no run is judged against it."""
        if self.failure is not None:
            value, what = self.failure(declared), "failure probability"
        elif kind_of(self.guarantee).on_the_rate and "delta" in stats:
            value, what = stats["delta"], "failure probability (the run's delta)"
        else:
            return math.nan
        try:
            p = float(value)
        except (TypeError, ValueError):
            p = math.nan
        if not 0.0 <= p <= 1.0:  # NaN too
            raise ImpossibleValue(f"bound {self.name}: its {what} is {value!r}, not a probability in [0, 1]: a bug in the bound "
                                  "(docs/plugins.md)")
        return p

    def rounding_allowance(self, declared: Stats) -> float:
        """The rounding allowance included in the bound's value (NaN when it declares none). Raise
        :class:`ImpossibleValue`, naming the bound, for one that is not a finite number >= 0."""
        if self.allowance is None:
            return math.nan
        value = self.allowance(declared)
        try:
            a = float(value)
        except (TypeError, ValueError):
            a = math.nan
        if not (math.isfinite(a) and a >= 0.0):
            raise ImpossibleValue(f"bound {self.name}: its rounding allowance is {value!r}, not a finite number >= 0: a bug in "
                                  "the bound (docs/plugins.md)")
        return a

    def _not_covered(self, reason: str, measured: float) -> dict[str, Any]:
        """The row of a run whose rule is outside every theorem of its learner: the measurement and the
        reason, nothing compared."""
        return {"bound": self.name, "title": self.title, "guarantee": self.guarantee, "quantity": self.quantity,
                "empirical": measured, "empirical_low": measured, "formula": self.formula,
                "reference": self.reference, "judged_at": self.judged_at, "trivial_text": self.trivial_text,
                "range_lo": math.nan, "range_hi": math.nan, "theoretical": math.nan, "trivial": math.nan,
                "ratio": math.nan, "max_ratio_over_t": math.nan, "holds": None, "informative": False,
                "applicable": False, "reason": reason, "comparator": ""}

    def _prefix(self, declared: Stats, steps: Mapping[str, Any] | None) -> tuple[Any, Any] | None:
        """(measured after each step, the bound after each step) of an anytime bound judged on the run's
        trace; None for a bound judged at T, or a direct call without the trace (judged at the last step)."""
        if self.anytime != "trace" or steps is None:
            return None
        if self.quantity not in steps:
            raise KeyError(f"bound {self.name} is judged at every step and the learner gave no per-step {self.quantity!r}")
        if self.curve is None:
            raise TypeError(f"bound {self.name} is judged at every step (anytime='trace') and declares no curve")
        measured_t = steps[self.quantity]
        t = np.arange(1, len(measured_t) + 1)
        return measured_t, self.curve({k: steps.get(k, v) for k, v in declared.items()} | {"T": t}, t)

    def evaluate(self, stats: Stats, empirical: Mapping[str, float],
                 steps: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One row of the results table: the bound next to the measured quantity, with its trivial
        value, and judged at every step from ``steps`` (per-step arrays, t = 1..T) for an anytime bound
        (without ``steps``, at the last step only, and the row says so). A run whose statistics carry
        ``not_covered`` (a reason: its rule is outside every theorem of its learner, e.g. Pegasos with an
        unregularised bias) gets the row of a bound that does not apply, with that reason, and nothing compared.
        The verdict's columns come from :func:`pipeline.judging.rows.judge_row`."""
        if stats.get("not_covered"):  # the run's rule is outside every theorem of its learner (e.g. a free bias)
            return self._not_covered(str(stats["not_covered"]), float(empirical.get(self.quantity, math.nan)))
        missing = [k for k in self.requires if k not in stats]
        if missing:
            raise KeyError(f"bound {self.name} needs statistics {missing}")
        declared = {k: stats[k] for k in self.requires}  # a bound sees only what it declares
        measured = empirical[self.quantity]
        row: dict[str, Any] = {
            "bound": self.name,
            "title": self.title,
            "guarantee": self.guarantee,
            "quantity": self.quantity,
            "empirical": float(measured),
            "empirical_low": float(empirical[self.quantity_low]) if self.quantity_low else float(measured),
            "formula": self.formula,
            "reference": self.reference,
            "judged_at": self.judged_at,
            "trivial_text": self.trivial_text,
        }
        lo, hi = self.range(declared) if self.range is not None else (math.nan, math.nan)
        row |= {"range_lo": float(lo), "range_hi": float(hi), "range_source": str(getattr(self.range, "name", ""))}
        reason = self.applies(declared)
        if reason is not None:
            return row | {"theoretical": math.nan, "trivial": math.nan, "ratio": math.nan, "max_ratio_over_t": math.nan,
                          "holds": None, "informative": False, "applicable": False, "reason": reason, "comparator": ""}
        if not math.isfinite(float(measured)):
            raise ImpossibleValue(f"learner {self.learner}: its {self.quantity} is {float(measured)}, not a finite number "
                                  f"(read by bound {self.name}): a bug in the learner")
        self.check_range(float(measured), float(row["empirical_low"]), float(lo), float(hi))
        value = self.value(declared)
        theoretical, comparator = value if isinstance(value, tuple) else (value, "")
        theoretical, trivial = float(theoretical), float(self.trivial(declared))
        prefix = self._prefix(declared, steps)
        judged_at = "T only" if self.anytime == "trace" and steps is None else self.judged_at  # without the trace: T only
        if math.isnan(theoretical):
            raise ImpossibleValue(f"bound {self.name}: its value is not a number on statistics {declared}: a bug in the bound")
        judged = judge_row(measured, theoretical, trivial, prefix)
        # what the verdict reads beside the value, checked as the value is: a probability in [0, 1], an allowance >= 0
        allowance = self.rounding_allowance(declared)
        failure = self.failure_probability(declared, stats)
        gap = theoretical - float(measured)
        identity = bool(judged["holds"]) and 0.0 <= gap <= 2.0 * allowance  # False when there is no allowance (NaN)
        if judged["invalid"]:  # a per-step trace that is not a number: never compared, the run fails
            raise ImpossibleValue(f"bound {self.name} (learner {self.learner}): {judged['invalid']}: a bug in the learner's "
                                  "trace or the bound's curve")
        certain = kind_of(self.guarantee).on_the_rate and failure >= 1.0  # may fail in every run: about no run
        reason = (f"an identity up to rounding: bound - measured = {gap:.3g} <= 2 x the rounding allowance {allowance:.3g} "
                  "(a consistency check, not evidence)") if identity else (
            f"vacuous: the bound may fail with probability {failure:g}, so no run can count against it or for it"
            if certain else (self.note(declared) or ""))
        return row | {
            "judged_at": judged_at,
            "theoretical": theoretical,
            "trivial": trivial,
            "ratio": float(judged["ratio"]),
            "max_ratio_over_t": float(judged["max_ratio_over_t"]),
            "holds": judged["holds"],
            "informative": judged["informative"] and not identity and not certain,
            "applicable": True,
            "reason": reason,
            "comparator": comparator,
            "identity": identity,
            "allowance": allowance,
            # above the bound at the upper estimate only: the comparator's bracket straddles it, no violation shown
            "straddles": bool(self.quantity_low) and prefix is None and judged["holds"] is False
            and float(row["empirical_low"]) <= theoretical,
            "failure": failure if self.failure is not None else math.nan,
        }
