"""Multiclass guarantees with the generalized hinge loss (UML section 17.2, [S3]; docs/bounds.md 7 and 8):
the per-run regret of UML Lemma 14.1 (D) and the excess-risk bounds of Cor. 17.2 (SGD) and Cor. 17.1
(the multiclass SVM) (E). Multiclass Pegasos and one-vs-all reuse the Pegasos bounds of section 4.

Label costs. With a cost Delta other than 0-1 (the learners' ``cost``) the constants of Lemma 14.1 and
Cors. 17.1-17.2 are unchanged (the loss's sub-gradients Psi(x, y') - Psi(x, y) do not depend on Delta), but
the loss of W = 0 is max_y' Delta(y', y), not 1: the trivial values read it (``regret_still``, and
``zero_loss_lo`` = min_y max_y' Delta(y', y) <= L_D(0) on the low side).
"""

from __future__ import annotations

import math

from pipeline.bounds.base import Bound, Stats
from pipeline.numerics import UNIT_ROUNDOFF
from pipeline.bounds.pegasos import pegasos_bounds
from pipeline.bounds.ranges import rlm_norm, sgd_growth

_UP = 1.0 + 32.0 * UNIT_ROUNDOFF  # rounding of a few products and a square root, upwards


def _realised(s: Stats) -> float:
    """||u||^2 / (2 eta) + (eta / 2) sum_t ||v_t||^2 (UML Lemma 14.1, with the run's own v_t)."""
    realised: float = (s["u_norm2"] / (2.0 * s["eta"]) + s["eta"] / 2.0 * s["vnorm2_sum"]) * _UP
    return realised


def _comparator_in_ball(s: Stats) -> str | None:
    return None if s["u_norm2"] <= s["B"] ** 2 * _UP else f"the comparator has ||u||^2 = {s['u_norm2']:.4g} > B^2"


def _zero_excess(s: Stats) -> float:
    """The excess risk of W = 0 on its low side: min_y max_y' Delta(y', y) (<= L_D(0); 1 for the 0-1 cost)
    minus the comparator's upper estimate."""
    return float(s["zero_loss_lo"]) - float(s["comparator_upper"])


_ZERO_EXCESS = ("min_y max_y' Delta(y', y) - min_ball L_D (upper estimate): the excess risk of W = 0 on its low side "
                "(its generalised hinge loss is max_y' Delta(y', y), 1 for the 0-1 cost)")


LEMMA14_1 = Bound(
    name="lemma14_1",
    title="Lemma 14.1 regret",
    learner="multiclass_sgd",
    guarantee="D",
    quantity="regret",
    requires=("u_norm2", "eta", "vnorm2_sum", "B", "regret_still"),
    reference="UML Lemma 14.1; [S3]; docs/bounds.md section 7 ((D) check)",
    formula="sum_t [l(w_t, z_t) - l(u, z_t)] <= ||u||^2/(2 eta) + (eta/2) sum_t ||v_t||^2",
    value=_realised,
    applies=_comparator_in_ball,
    curve=lambda s, t: _realised(s),  # s['vnorm2_sum'] read at each step t (Outcome.steps, Bound.curve_of)
    trivial=lambda s: float(s["regret_still"]),
    trivial_text=("the regret of w = 0 throughout, sum_t [l(0, z_t) - l(u, z_t)] (the generalised hinge loss of 0 is "
                  "max_y' Delta(y', y_t): 1 for the 0-1 cost)"),
    anytime="trace",
)

LEMMA14_1_RATE = Bound(
    name="lemma14_1_rate",
    title="Lemma 14.1 regret, B rho sqrt(T)",
    learner="multiclass_sgd",
    guarantee="D",
    quantity="regret",
    requires=("u_norm2", "B", "rho", "T", "regret_still"),
    reference="UML Lemma 14.1 and Cor. 14.12 with eta = B/(rho sqrt(T)); docs/bounds.md section 7",
    formula="sum_t [l(w_t, z_t) - l(u, z_t)] <= B rho sqrt(T), rho = 2R",
    value=lambda s: s["B"] * s["rho"] * math.sqrt(s["T"]) * _UP,
    applies=_comparator_in_ball,
    trivial=lambda s: float(s["regret_still"]),
    trivial_text="the regret of w = 0 throughout, sum_t [l(0, z_t) - l(u, z_t)]",
)

COR17_2 = Bound(
    name="cor17_2",
    title="Cor. 17.2 excess risk",
    learner="multiclass_sgd",
    guarantee="E",
    quantity="excess",
    requires=tuple(dict.fromkeys(("B", "rho", "T", "comparator_upper", "zero_loss_lo", *sgd_growth.requires))),
    reference="UML Cor. 17.2 ([S3]); docs/bounds.md section 7",
    formula="E L_D(w_bar) - min_(||u||<=B) L_D(u) <= B rho / sqrt(T), rho = 2R",
    value=lambda s: s["B"] * s["rho"] / math.sqrt(s["T"]) * _UP,
    trivial=_zero_excess,
    trivial_text=_ZERO_EXCESS,
    quantity_low="excess_upper_comparator",
    range=sgd_growth,
)

COR17_2_SHARP = Bound(
    name="cor17_2_sharp",
    title="Cor. 17.2, sharper constant",
    learner="multiclass_sgd",
    guarantee="E",
    quantity="excess",
    requires=tuple(dict.fromkeys(("B", "eta", "rho_sharp", "T", "comparator_upper", "zero_loss_lo", *sgd_growth.requires))),
    reference="UML Thm 14.8 / Cor. 14.12 with ||v_t|| <= rho' = sqrt(2) R; docs/bounds.md section 7",
    formula="E L_D(w_bar) - min_(||u||<=B) L_D(u) <= B^2/(2 eta T) + eta rho'^2 / 2",
    value=lambda s: (s["B"] ** 2 / (2.0 * s["eta"] * s["T"]) + s["eta"] * s["rho_sharp"] ** 2 / 2.0) * _UP,
    trivial=_zero_excess,
    trivial_text=_ZERO_EXCESS,
    quantity_low="excess_upper_comparator",
    range=sgd_growth,
)

COR17_1 = Bound(
    name="cor17_1",
    title="Cor. 17.1 excess risk",
    learner="multiclass_svm",
    guarantee="E",
    quantity="excess",
    requires=tuple(dict.fromkeys(("B", "rho", "m", "comparator_upper", "zero_loss_lo", *rlm_norm.requires))),
    reference="UML Cor. 17.1 (via Cor. 13.8) ([S3]); docs/bounds.md section 7",
    formula="E L_D(W) - min_(||u||<=B) L_D(u) <= sqrt(8 rho^2 B^2 / m), lam = sqrt(2 rho^2 / (B^2 m))",
    value=lambda s: math.sqrt(8.0 * s["rho"] ** 2 * s["B"] ** 2 / s["m"]) * _UP,
    trivial=_zero_excess,
    trivial_text=_ZERO_EXCESS,
    quantity_low="excess_upper_comparator",
    range=rlm_norm,
)

MULTICLASS_BOUNDS: tuple[Bound, ...] = (
    LEMMA14_1, LEMMA14_1_RATE, COR17_2, COR17_2_SHARP, COR17_1,
    *pegasos_bounds("multiclass_pegasos", "mc_", cost=True), *pegasos_bounds("ova", "ova_"),
)
