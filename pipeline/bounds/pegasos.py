"""Pegasos' guarantees (docs/bounds.md sections 4 to 6): the per-run regret of Lemma 1 (D), the expectation
bound on the averaged iterate (E) and its high-probability version (P) [P11 = Shalev-Shwartz, Singer,
Srebro & Cotter, Math. Program. 127(1), 2011]. Shared by linear and kernelized Pegasos. The constant c = G^2
they read is a statistic (:func:`pipeline.job.statistics.pegasos_constant`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from pipeline.bounds.base import Bound, Stats
from pipeline.bounds.ranges import pegasos_ball
from pipeline.numerics import UNIT_ROUNDOFF


def _rate(s: Stats) -> float:
    """c (1 + ln T) / (2 lam T), rounded up."""
    T = s["T"]
    rate: float = s["c"] * (1.0 + math.log(T)) / (2.0 * s["lam"] * T) * (1.0 + 16.0 * UNIT_ROUNDOFF)
    return rate


def _rate_curve(s: Stats, t: np.ndarray) -> np.ndarray:
    rate: np.ndarray = s["c"] * (1.0 + np.log(t)) / (2.0 * s["lam"] * t) * (1.0 + 16.0 * UNIT_ROUNDOFF)
    return rate


def _iid(s: Stats) -> str | None:
    if s["sampling"] in ("iid", "class_balanced"):
        return None
    return f"sampling={s['sampling']}: not covered, the analysis needs sampling with replacement (P11 section 7.5)"


def _start_gap(s: Stats) -> float:
    """f(w_1) - f*_hi: the suboptimality of the learner that never moves from w_1, on the low side (f*_hi
    >= f*), so that a bound is called informative only when it is below the exact value (docs/bounds.md 4)."""
    return float(s["f_start"] - s["f_star_hi"])


def _ranged(bound: Bound) -> Bound:
    """``bound`` with the range the iterates' ball gives its suboptimality (:data:`pipeline.bounds.ranges.pegasos_ball`:
    [0, f(w_1) + lam r^2 / 2 + L r - f*_lo], docs/bounds.md section 4, "Ranges from the theory"), reading its statistics."""
    return replace(bound, range=pegasos_ball, requires=tuple(dict.fromkeys((*bound.requires, *pegasos_ball.requires))))


def _high_probability(s: Stats) -> str | None:
    why = _iid(s)
    if why:
        return why
    if s["R"] < 1.0 or s["lam"] > 0.25:
        return f"needs R >= 1 and lam <= 1/4 (P11 Lemma 2); here R = {s['R']:.3g}, lam = {s['lam']:.3g}"
    return None


def _high_probability_cost(s: Stats) -> str | None:
    why = _high_probability(s)
    if why:
        return why
    if s["cost_max"] > 1.0:
        return (f"max Delta = {s['cost_max']:.4g} > 1: the constants of P11 Lemma 2 are derived for losses of the 0-1 "
                "cost's range (docs/bounds.md section 8)")
    return None


def pegasos_bounds(learner: str, prefix: str = "", cost: bool = False) -> tuple[Bound, ...]:
    """The Pegasos bounds, for ``learner`` (linear or kernelized Pegasos); names start with ``prefix``.
    ``cost``: the learner has a label cost (multiclass Pegasos), whose largest value ``cost_max`` the
    high-probability bound reads (not applicable above 1)."""
    return (
        Bound(
            name=f"{prefix}regret",
            title="Lemma 1 regret",
            learner=learner,
            guarantee="D",
            quantity="regret",
            requires=("c", "lam", "T", "regret_still"),
            reference="P11 Lemma 1 and Thm 1; docs/bounds.md section 4 ((D) check, per run)",
            formula="(1/T) sum_t [f_t(w_t) - f_t(u)] <= c (1 + ln T) / (2 lam T)",
            value=_rate,
            curve=_rate_curve,
            trivial=lambda s: float(s["regret_still"]),
            trivial_text="the regret of the learner that stays at w_1, (1/T) sum_t [f_t(w_1) - f_t(u)]",
            anytime="trace",
        ),
        _ranged(Bound(
            name=f"{prefix}expectation",
            title="Expected suboptimality",
            learner=learner,
            guarantee="E",
            quantity="suboptimality",
            requires=("c", "lam", "T", "sampling", "f_start", "f_star_hi"),
            reference="P11 Thm 1 and Cor. 1; P07 Thm 2; UML Thm 14.11; docs/bounds.md section 4 ((E) check)",
            formula="E f(w_bar) - f* <= c (1 + ln T) / (2 lam T)",
            value=_rate,
            applies=_iid,
            curve=_rate_curve,
            trivial=_start_gap,
            trivial_text="f(w_1) - f*_hi, the suboptimality of the learner that never moves",
            quantity_low="suboptimality_low",
        )),
        _ranged(Bound(
            name=f"{prefix}high_probability",
            title="High-probability suboptimality",
            learner=learner,
            guarantee="P",
            quantity="suboptimality",
            requires=("c", "lam", "T", "sampling", "R", "delta", "f_start", "f_star_hi", *(("cost_max",) if cost else ())),
            reference="P11 Lemma 2 and Cor. 2 (Kakade & Tewari 2009, Cor. 7); docs/bounds.md section 4",
            formula="with probability >= 1 - delta: f(w_bar) - f* <= 21 c ln(T/delta) / (lam T)",
            value=lambda s: 21.0 * s["c"] * math.log(s["T"] / s["delta"]) / (s["lam"] * s["T"]) * (1.0 + 16.0 * UNIT_ROUNDOFF),
            applies=_high_probability_cost if cost else _high_probability,
            trivial=_start_gap,
            trivial_text="f(w_1) - f*_hi, the suboptimality of the learner that never moves",
            quantity_low="suboptimality_low",
        )),
        Bound(
            name=f"{prefix}last_iterate",
            title="Last iterate",
            learner=learner,
            guarantee="-",
            quantity="suboptimality_last",
            requires=(),
            reference="docs/bounds.md section 4: no bound for w_(T+1)",
            formula="none",
            value=lambda s: math.nan,
            applies=lambda s: "no guarantee for the last iterate w_(T+1); reported for comparison",
        ),
    )


def _whole_sample(s: Stats) -> str | None:
    """A_t = S at every step: a batch of all m examples without repetition (perm or inorder epochs of one batch)."""
    if s["batch"] != s["m"] or s["sampling"] not in ("perm", "inorder"):
        return (f"needs A_t = S at every step (batch = m = {s['m']} with sampling perm or inorder); here batch = "
                f"{s['batch']}, sampling = {s['sampling']}")
    return None


FULL_BATCH = _ranged(Bound(
    name="full_batch",
    title="Full-batch suboptimality",
    learner="pegasos",
    guarantee="D",
    quantity="suboptimality",
    requires=("c", "lam", "T", "sampling", "batch", "m", "f_start", "f_star_hi"),
    reference="P11 Cor. 1 with A_t = S (Lemma 1 with f_t = f, then Jensen); docs/bounds.md section 4",
    formula="f(w_bar) - f* <= c (1 + ln T) / (2 lam T), A_t = S",
    value=_rate,
    applies=_whole_sample,
    curve=_rate_curve,
    trivial=_start_gap,
    trivial_text="f(w_1) - f*_hi, the suboptimality of the learner that never moves",
    quantity_low="suboptimality_low",
))

RANDOM_ITERATE = _ranged(Bound(
    name="random_iterate",
    title="Random iterate",
    learner="pegasos",
    guarantee="E",
    quantity="suboptimality_random",
    requires=("c", "lam", "T", "sampling", "f_start", "f_star_hi"),
    reference="P07 Thm 2; UML Thm 14.11 (E_A E_r f(w_r)); docs/bounds.md section 4",
    formula="E f(w_r) - f* <= c (1 + ln T) / (2 lam T), r uniform in 1..T",
    value=_rate,
    applies=_iid,
    trivial=_start_gap,
    trivial_text="f(w_1) - f*_hi, the suboptimality of the learner that never moves",
    quantity_low="suboptimality_random_low",
))

def _markov(name: str, title: str, iterate: str, quantity: str, reference: str) -> Bound:
    """The expectation bound turned into a (P) bound by Markov's inequality on the non-negative f(w) - f*:
    with probability >= 1 - delta, f(w) - f* <= c (1 + ln T) / (2 delta lam T), for the iterate ``iterate``."""
    return _ranged(Bound(
        name=name,
        title=title,
        learner="pegasos",
        guarantee="P",
        quantity=quantity,
        requires=("c", "lam", "T", "sampling", "delta", "f_start", "f_star_hi"),
        reference=reference,
        formula=f"with probability >= 1 - delta: f({iterate}) - f* <= c (1 + ln T) / (2 delta lam T)",
        value=lambda s: _rate(s) / s["delta"] * (1.0 + 2.0 * UNIT_ROUNDOFF),
        applies=_iid,
        trivial=_start_gap,
        trivial_text="f(w_1) - f*_hi, the suboptimality of the learner that never moves",
        quantity_low=f"{quantity}_low",
    ))


RANDOM_MARKOV = _markov("random_iterate_markov", "Random iterate (Markov)", "w_r", "suboptimality_random",
                        "P07 Thm 3 (Markov's inequality on the nonnegative f(w_r) - f*); docs/bounds.md section 4")

TELESCOPED = Bound(
    name="regret_telescoped",
    title="Lemma 1 regret, realised",
    learner="pegasos",
    guarantee="D",
    quantity="regret",
    requires=("telescoped", "telescoped_allowance", "regret_still"),
    reference="P11 Lemma 1, its proof telescoped before ||grad_t|| <= G; docs/bounds.md section 4 ((D) check)",
    formula="(1/T) sum_t [f_t(w_t) - f_t(u)] <= (1/T) [sum_t ||grad_t||^2 / (2 lam t) - (lam T / 2) ||w_(T+1) - u||^2]",
    value=lambda s: float(s["telescoped"]),
    applies=lambda s: None if math.isfinite(s["telescoped"]) else
    "the realised sum overflows float64 at these inputs (lam and the data's scale far from 1)",
    allowance=lambda s: float(s["telescoped_allowance"]),
    trivial=lambda s: float(s["regret_still"]),
    trivial_text="the regret of the learner that stays at w_1, (1/T) sum_t [f_t(w_1) - f_t(u)]",
)

HINDSIGHT = Bound(
    name="regret_hindsight",
    title="Lemma 1 regret, best u in hindsight",
    learner="pegasos",
    guarantee="D",
    quantity="regret_hindsight",
    requires=("c", "lam", "T", "regret_still_hindsight"),
    reference="P11 Lemma 1 (for every u in the ball, so for the hardest); docs/bounds.md section 4 ((D) check, per run)",
    formula="(1/T) sum_t f_t(w_t) - min_u (1/T) sum_t f_t(u) <= c (1 + ln T) / (2 lam T)",
    value=_rate,
    trivial=lambda s: float(s["regret_still_hindsight"]),
    trivial_text="the same regret of the learner that stays at w_1, (1/T) sum_t f_t(w_1) - min_u (1/T) sum_t f_t(u)",
    quantity_low="regret_hindsight_low",
)

MARKOV_AVERAGE = _markov("expectation_markov", "Averaged iterate (Markov)", "w_bar", "suboptimality",
                         "P11 Cor. 1 in expectation with Markov's inequality on the non-negative f(w_bar) - f*; "
                         "docs/bounds.md section 4, expectation_markov")

LEMMA3 = _ranged(Bound(
    name="random_iterate_lemma3",
    title="Random iterate (Lemma 3)",
    learner="pegasos",
    guarantee="P",
    quantity="suboptimality_random",
    requires=("c", "lam", "T", "sampling", "R", "delta", "f_start", "f_star_hi"),
    reference="P11 Lemma 3 (with Lemma 2's event of probability 1 - delta: fails with probability <= 1/2 + delta); "
              "docs/bounds.md section 4",
    formula="with probability >= 1/2 - delta: f(w_r) - f* <= 42 c ln(T/delta) / (lam T), r uniform in 1..T",
    value=lambda s: 42.0 * s["c"] * math.log(s["T"] / s["delta"]) / (s["lam"] * s["T"]) * (1.0 + 16.0 * UNIT_ROUNDOFF),
    applies=_high_probability,
    trivial=_start_gap,
    trivial_text="f(w_1) - f*_hi, the suboptimality of the learner that never moves",
    quantity_low="suboptimality_random_low",
    failure=lambda s: min(1.0, 0.5 + s["delta"]),
))

PEGASOS_BOUNDS = (*pegasos_bounds("pegasos"), FULL_BATCH, RANDOM_ITERATE, RANDOM_MARKOV, MARKOV_AVERAGE, LEMMA3,
                  TELESCOPED, HINDSIGHT)
