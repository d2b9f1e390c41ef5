"""The ranges the theory gives the (E) and (P) quantities (docs/bounds.md, "Ranges from the theory").

A test of "E[measured] <= bound" needs the top of the quantity's range: without one a rare large value could
hide above any sample, and no number of seeds bounds the mean (pipeline.judging.limits). The algorithms' invariants
give that top. Each range here is a function of statistics that do not depend on the run's own random draws
(the data's certified radius, lam, T, the label cost, the value at the start and the certified optimum's lower
end, all functions of the sample and the configuration), so the per-run null of the (E) test, "E[measured |
data] >= bound(data)", keeps its meaning. Each is rounded outwards and widened by :data:`SLACK` (the relative
rounding of evaluating an objective over up to 2^30 terms, far below the tops' own looseness), and each
carries a name (``Range.name``) that the results, metrics.json and the report quote as the range's source.

- :func:`pegasos_ball` (the Pegasos family, sections 4 to 6 and 8, averaged, last and random iterates): every
  iterate lies within r of w_1 (the projection ball's radius, or s_max G_x / lam by induction without
  projection), and the objective's loss part is L-Lipschitz, so f(w) <= f(w_1) + lam r^2 / 2 + L r on that
  ball, and f(w) - f* <= that - f*_lo.
- :func:`sgd_growth` (multiclass SGD, Cor. 17.2): the update only fires where the loss-augmented score is >= 0,
  so ||W_(t+1)||^2 <= ||W_t||^2 + 2 eta max Delta + 2 eta^2 R^2, and a held-out generalised hinge loss is at
  most max Delta + sqrt(2) R ||W_bar||.
- :func:`rlm_norm` (the multiclass SVM, Cor. 17.1): lam ||W||^2 <= F(W) <= F(0) + the certified gap, where
  F(0) <= max Delta; the solver's gap is checked to be within :data:`SVM_GAP` (else the run fails, naming it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from pipeline.bounds.base import Stats
from pipeline.numerics import UNIT_ROUNDOFF

SLACK = 2.0**-20  # relative: the rounding of f evaluated over <= 2^30 terms (2^30 u = 1.2e-7), with room
SVM_GAP = 1e-6  # the largest certified duality gap of the multiclass SVM a range is declared for
_UP = 1.0 + 8.0 * UNIT_ROUNDOFF


@dataclass(frozen=True)
class Range:
    """A range of a bound's quantity by the theory: ``name`` (its derivation, in docs/bounds.md), ``requires``
    (the statistics it reads, which the bound declares too) and ``of`` (statistics -> (lo, hi))."""

    name: str
    requires: tuple[str, ...]
    of: Callable[[Stats], tuple[float, float]]

    def __call__(self, s: Stats) -> tuple[float, float]:
        return self.of(s)


def _up(x: float) -> float:
    return x * (1.0 + SLACK) if x > 0 else x * (1.0 - SLACK)


def _pegasos_top(s: Stats) -> tuple[float, float]:
    """[0, min(f(w_1) + lam r^2 / 2 + L r, the hull's top) - f*_lo], r = ``iterate_radius``, L = ``loss_lipschitz``,
    the hull's top ``hull_top`` (the largest f on the polytope the binary runs' iterates lie in; NaN where not
    searched, pipeline.job.statistics.hull_top): the iterates lie in both sets."""
    lam, r, lip = float(s["lam"]), float(s["iterate_radius"]), float(s["loss_lipschitz"])
    if not all(math.isfinite(v) for v in (lam, r, lip, float(s["f_start"]), float(s["f_star_lo"]))):
        return 0.0, math.inf
    ball = (float(s["f_start"]) * _UP + lam * r * r / 2.0 * _UP * _UP + lip * r * _UP) * _UP
    hull = float(s.get("hull_top", math.nan))
    if math.isfinite(hull):  # the hull's vertices are w_1 (f_start) and the steps' ends (hull_top)
        ball = min(ball, max(hull, float(s["f_start"]) * _UP))
    top = ball - float(s["f_star_lo"])
    return 0.0, _up(top * _UP)


pegasos_ball = Range("pegasos_ball", ("lam", "iterate_radius", "loss_lipschitz", "hull_top", "f_start", "f_star_lo"),
                     _pegasos_top)


def sgd_norm(s: Stats) -> float:
    """An upper bound of ||W_bar||_F for multiclass SGD after T steps from W = 0 (docs/bounds.md section 7):
    ||W_(t+1)||^2 <= ||W_t||^2 + 2 eta max Delta + eta^2 ||v_t||^2 with ||v_t||^2 <= 2 R^2, so every W_t of the
    average (at most T steps) is within sqrt(T (2 eta max Delta + 2 eta^2 R^2))."""
    T, eta, R, dmax = float(s["T"]), float(s["eta"]), float(s["R"]), float(s["cost_max"])
    per_step = (2.0 * eta * dmax * _UP + 2.0 * eta * eta * R * R * _UP * _UP) * _UP
    return math.sqrt(T * per_step * _UP) * _UP


def _sgd_range(s: Stats) -> tuple[float, float]:
    """The excess = held-out generalised hinge risk - comparator: each held-out loss is in [0, max Delta +
    sqrt(2) R ||W_bar||], the comparator (a ball minimum of a loss <= that of 0) in [0, max Delta]."""
    dmax, R = float(s["cost_max"]), float(s["R"])
    return -dmax, _up((dmax + math.sqrt(2.0) * _UP * R * sgd_norm(s) * _UP) * _UP)


sgd_growth = Range("sgd_growth", ("T", "eta", "R", "cost_max"), _sgd_range)


def _svm_range(s: Stats) -> tuple[float, float]:
    """||W||^2 <= (max Delta + SVM_GAP) / lam_uml for the RLM solution (F(W) <= F* + gap <= F(0) + gap), so each
    held-out loss is in [0, max Delta + sqrt(2) R ||W||]; the excess subtracts a comparator in [0, max Delta]."""
    dmax, R, lam = float(s["cost_max"]), float(s["R"]), float(s["lam_uml"])
    if not float(s["dual_gap"]) <= SVM_GAP:  # the solver did not certify F(W) <= F* + SVM_GAP: no top is known
        return -dmax, math.inf
    norm = math.sqrt((dmax + SVM_GAP) / lam * _UP) * _UP
    return -dmax, _up((dmax + math.sqrt(2.0) * _UP * R * norm * _UP) * _UP)


rlm_norm = Range("rlm_norm", ("cost_max", "R", "lam_uml", "dual_gap"), _svm_range)
