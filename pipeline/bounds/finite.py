"""Mistake bounds over finite classes: Halving and Weighted Majority (docs/bounds.md section 3).

|H| is the number of distinct functions of the class on the sample (what the learners run over), m*
the best expert's mistakes on the stream, counted exactly from the table.
"""

from __future__ import annotations

import math

from pipeline.bounds.base import Bound, Stats
from pipeline.numerics import UNIT_ROUNDOFF


def _halving(s: Stats) -> tuple[int, str]:
    # floor(log2 H) of an integer, exactly: no floating point at all
    return int(s["H"]).bit_length() - 1, f"|H| = {s['H']}"


HALVING = Bound(
    name="halving",
    title="Halving",
    learner="halving",
    guarantee="D",
    quantity="mistakes",
    requires=("H", "m_star", "T"),
    reference="Littlestone 1988; Littlestone & Warmuth 1994; UML section 21.1; docs/bounds.md section 3",
    formula="floor(log2 |H|)",
    value=_halving,
    applies=lambda s: None if s["m_star"] == 0 else f"not realisable: the best of |H| = {s['H']} errs {s['m_star']} times",
    trivial=lambda s: float(s["T"]),
    range=lambda s: (0.0, float(s["T"])),  # a count of mistakes in T rounds
    trivial_text="T, the rounds presented",
    anytime="monotone",
    beside=("game_value", "littlestone", "game_status"),  # the exact worst case of the game (pipeline.job.statistics)
)


def _vote_slack(H: int) -> float:
    """Relative error of one step's computed weighted sums (each weight exp(-a) within (a + 2) u of
    its exact value, the leader's exactly 1, and |H| additions): a computed vote or probability is off
    by at most this fraction of the total weight (docs/bounds.md section 0: rounding never makes a violation)."""
    return 8.0 * (H + 1) * UNIT_ROUNDOFF


def _weighted_majority(s: Stats) -> tuple[float, str]:
    """(ln|H| + m* ln(1/beta)) / ln(2/(1+beta)), for the beta the learner used: exp(fl(ln beta)).

    A computed vote may pick a side short of half the weight by the vote slack delta, so the total
    shrinks by (1+beta)/2 (1 + 2 delta) per mistake: the denominator loses 2 delta.
    """
    H, m_star, beta = int(s["H"]), int(s["m_star"]), float(s["beta"])
    if m_star == 0 and beta == 0:
        numerator, denominator = math.log(H), math.log(2.0)
    else:
        log_beta = math.log(beta)  # the learner's own ln beta, so the bound speaks of the algorithm that ran
        numerator = math.log(H) - m_star * log_beta
        denominator = -math.log1p(math.expm1(log_beta) / 2)  # ln(2/(1+beta)), accurate as beta -> 1
    denominator -= 2 * _vote_slack(H)
    value = numerator / denominator * (1 + 16 * UNIT_ROUNDOFF) if denominator > 0 else math.inf
    return value, f"best expert: m* = {m_star} of |H| = {H}"


def _weighted_majority_applies(s: Stats) -> str | None:
    if s["randomized"]:
        return "randomised predictions (randomized=true): the deterministic bound is for the weighted majority vote"
    if s["beta"] == 0 and s["m_star"] > 0:
        return f"beta = 0 and m* = {s['m_star']} > 0: m* ln(1/beta) is infinite (every expert's weight is 0)"
    return None


WEIGHTED_MAJORITY = Bound(
    name="weighted_majority",
    title="Weighted Majority",
    learner="weighted_majority",
    guarantee="D",
    quantity="mistakes",
    requires=("H", "m_star", "beta", "randomized", "T"),
    reference="Littlestone & Warmuth 1994; docs/bounds.md section 3",
    formula="(ln|H| + m* ln(1/beta)) / ln(2/(1+beta))",
    value=_weighted_majority,
    applies=_weighted_majority_applies,
    trivial=lambda s: float(s["T"]),
    range=lambda s: (0.0, float(s["T"])),  # a count of mistakes in T rounds
    trivial_text="T, the rounds presented",
)


def _randomized(s: Stats) -> tuple[float, str]:
    """sqrt(2 ln|H| T), plus the rounding of the computed expected count (T steps of vote slack and
    the correctly rounded sums): the computed regret is within that of the exact one."""
    H, T = int(s["H"]), int(s["T"])
    value = math.sqrt(2 * math.log(H) * T) * (1 + 8 * UNIT_ROUNDOFF) + T * (_vote_slack(H) + 4 * UNIT_ROUNDOFF)
    return value, f"best expert: m* = {s['m_star']} of |H| = {H}"


def _randomized_applies(s: Stats) -> str | None:
    if not s["randomized"]:
        return "deterministic predictions (randomized=false): the regret bound needs randomised ones"
    if s["T"] <= 2 * math.log(s["H"]):
        return f"T = {s['T']} <= 2 ln|H| = {2 * math.log(s['H']):.4g}: the theorem needs eta = sqrt(2 ln|H|/T) < 1"
    return None


RANDOMIZED_WEIGHTED_MAJORITY = Bound(
    name="randomized_weighted_majority",
    title="Randomised Weighted Majority",
    learner="weighted_majority",
    guarantee="D",
    quantity="regret",
    requires=("H", "m_star", "T", "randomized"),
    reference="UML Thm 21.11; docs/bounds.md section 3 (exact expected mistakes, not sampled)",
    formula="sqrt(2 ln|H| T)",
    value=_randomized,
    applies=_randomized_applies,
    trivial=lambda s: float(s["T"] - s["m_star"]),
    trivial_text="T - m*, the largest regret possible (every round a certain mistake)",
)

FINITE_BOUNDS: tuple[Bound, ...] = (HALVING, WEIGHTED_MAJORITY, RANDOMIZED_WEIGHTED_MAJORITY)
