"""The Perceptron's mistake bounds (docs/bounds.md sections 1 and 2)."""

from __future__ import annotations

import math
import numpy as np

from pipeline._jit import helper, kernel
from pipeline.bounds.base import Bound, Stats
from pipeline.numerics import UNIT_ROUNDOFF


def _novikoff(s: Stats) -> float:
    # R is a rigorous upper bound and gamma_lo a rigorous lower bound (pipeline.data), so
    # (R/gamma_lo)^2 >= (R*/gamma*)^2 exactly; the factor covers the rounding of the division and the
    # square, so the floor never drops below the exact bound's floor (a tight case stays tight).
    square: float = (s["R"] / s["gamma_lo"]) ** 2 * (1.0 + 8.0 * UNIT_ROUNDOFF)
    return math.floor(square)


NOVIKOFF = Bound(
    name="novikoff",
    title="Novikoff",
    learner="perceptron",
    guarantee="D",
    quantity="mistakes",
    requires=("R", "gamma_lo", "separable", "T"),
    reference="Novikoff 1962; [S2] Thm 2; [S1] slide 6; docs/bounds.md section 1",
    formula="floor((R/gamma_lo)^2)",
    value=_novikoff,
    applies=lambda s: None if s["separable"] else "data not certified separable (LP infeasible, or gamma_lo <= 0)",
    trivial=lambda s: float(s["T"]),
    range=lambda s: (0.0, float(s["T"])),  # a count of mistakes in T rounds
    trivial_text="T, the rounds presented (a learner errs at most once a round)",
    anytime="monotone",
)

# Scales s of u = s v (v a unit comparator direction), relative to 1/R, and margins gamma relative to R.
SCALES = np.geomspace(1e-2, 1e6, 321)
GAMMAS = np.geomspace(1e-6, 1.0, 241)


@helper
def _sum_at(c: float, a: float, m: np.ndarray, squared: bool) -> float:
    """sum_i max(0, c - a m_i), or of its squares when ``squared``, for margins m sorted ascending and a > 0: the
    hinge sum at scale a is ``_sum_at(1, a, m, False)``, Freund and Schapire's at margin g ``_sum_at(g, 1, m, True)``
    (1 m_i is m_i exactly).

    Four accumulators over i = 0, 1, 2, 3 (mod 4), the tail added to the first, combined as (s0 + s1) + (s2 + s3):
    a fixed order, and any order is covered by the bound's rounding factor (a sum of n terms errs by at most
    gamma_(n-1) times their sum: Higham, *Accuracy and Stability of Numerical Algorithms*, eq. 3.5). The terms
    fall as m_i grows (fl is monotone), so once a block's last term is 0 every later term is 0 and the sum
    stops: adding zeros would leave the same bits.
    """
    n = m.shape[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    i = 0
    while i + 4 <= n:
        t0 = max(0.0, c - a * m[i])
        t1 = max(0.0, c - a * m[i + 1])
        t2 = max(0.0, c - a * m[i + 2])
        t3 = max(0.0, c - a * m[i + 3])
        if squared:
            t0, t1, t2, t3 = t0 * t0, t1 * t1, t2 * t2, t3 * t3
        s0 += t0
        s1 += t1
        s2 += t2
        s3 += t3
        i += 4
        if t3 <= 0.0:
            return float((s0 + s1) + (s2 + s3))
    for k in range(i, n):
        t = max(0.0, c - a * m[k])
        s0 += t * t if squared else t
    return float((s0 + s1) + (s2 + s3))


@kernel
def _hinge_least(scales: np.ndarray, extra: float, m: np.ndarray, R: float, passes: float, factor: float,
                 f8: float) -> tuple[int, float, float]:
    """The least of the hinge bound ((R a + sqrt((R a)^2 + 4 L))/2)^2 f8, L = passes * :func:`_sum_at` (1, a, m)
    * factor, over the scales a (then ``extra`` when > 0), as (index, value, L there); the first index of the
    least value, as numpy's argmin of the values finds it; index -1 when none is below infinity or one is NaN
    (argmin would find the NaN, which no comparison selects)."""
    n = scales.shape[0]
    best_i = -1
    best = np.inf
    best_loss = 0.0
    total = n + 1 if extra > 0.0 else n
    for k in range(total):
        a = scales[k] if k < n else extra
        loss = passes * _sum_at(1.0, a, m, False) * factor
        ra = R * a
        value = ((ra + np.sqrt(ra * ra + 4.0 * loss)) / 2.0) ** 2 * f8
        if value != value:
            return -1, np.nan, np.nan
        if value < best:
            best_i, best, best_loss = k, value, loss
    return best_i, best, best_loss


@kernel
def _short_least(gammas: np.ndarray, m: np.ndarray, R: float, passes: float, factor: float,
                 f8: float) -> tuple[int, float, float]:
    """The least of Freund and Schapire's ((R + D)/g)^2 f8, D = sqrt(passes * :func:`_sum_at` (g, 1, m, squared) * factor),
    over the margins g, as (index, value, D there), found as :func:`_hinge_least` finds its least."""
    best_i = -1
    best = np.inf
    best_D = 0.0
    for k in range(gammas.shape[0]):
        g = gammas[k]
        D = np.sqrt(passes * _sum_at(g, 1.0, m, True) * factor)
        value = ((R + D) / g) ** 2 * f8
        if value != value:
            return -1, np.nan, np.nan
        if value < best:
            best_i, best, best_D = k, value, D
    return best_i, best, best_D


def _passes(s: Stats, m: np.ndarray) -> float:
    # sums over the T rounds are T / len(m) times the sums over the comparator's margins m: one per example of
    # the sample when the rounds are passes over it (T / m passes), one per round when the run presented
    # another sequence (ordering=adaptive: pipeline.job.statistics gives the margins of the rows presented)
    rounds: float = s["T"] / m.size
    return rounds


def _hinge_all_rounds(s: Stats) -> tuple[float, str]:
    """min over comparators u of ((R||u|| + sqrt(R^2||u||^2 + 4 L_T(u))) / 2)^2 (UML eq. 21.6)."""
    R, best = s["R"], (math.inf, "")
    scales = SCALES / R
    for name, m in s["comparators"].items():
        # L_T(a v) for every scale a; m are lower bounds of the margins, so L_T is over-estimated.
        # u = v / min margin has L_T(u) = 0 and the bound (R/gamma_v)^2: Novikoff's form, for that v
        extra = 1.0 / m.min() if m.size and m.min() > 0 else 0.0
        i, value, loss = _hinge_least(scales, extra, np.sort(m), R, _passes(s, m), 1 + 2 * len(m) * UNIT_ROUNDOFF,
                                      1 + 8 * UNIT_ROUNDOFF)
        if i >= 0 and value < best[0]:
            scale = scales[i] if i < scales.size else extra
            best = (float(value), f"u = {scale:.4g} * {name}, L_T(u) = {loss:.4g}")
    # mistakes are a whole number: M <= b implies M <= floor(b)
    return (float(math.floor(best[0])) if math.isfinite(best[0]) else best[0]), best[1]


def _freund_schapire(s: Stats) -> tuple[float, str]:
    """min over unit comparators u and margins gamma of ((R + D)/gamma)^2, D^2 = sum_t max(0, gamma - y_t u.x_t)^2."""
    R, best = s["R"], (math.inf, "")
    gammas = GAMMAS * R
    for name, m in s["comparators"].items():
        i, value, D = _short_least(gammas, np.sort(m), R, _passes(s, m), 1 + 2 * len(m) * UNIT_ROUNDOFF,
                                   1 + 8 * UNIT_ROUNDOFF)
        if i >= 0 and value < best[0]:
            best = (float(value), f"u = {name}, gamma = {gammas[i]:.4g}, D = {D:.4g}")
    return best


HINGE = Bound(
    name="hinge_all_rounds",
    title="All-rounds hinge",
    learner="perceptron",
    guarantee="D",
    quantity="mistakes",
    requires=("R", "T", "m", "comparators"),
    reference="[OLS] section 3.3; UML Thm 21.16 and eq. 21.6, with L_T(u) >= L_M(u); docs/bounds.md section 2",
    formula="floor(min_u ((R||u|| + sqrt(R^2||u||^2 + 4 L_T(u)))/2)^2)",
    value=_hinge_all_rounds,
    trivial=lambda s: float(s["T"]),
    range=lambda s: (0.0, float(s["T"])),  # a count of mistakes in T rounds
    trivial_text="T, the rounds presented",
)

FREUND_SCHAPIRE = Bound(
    name="freund_schapire",
    title="Freund-Schapire",
    learner="perceptron",
    guarantee="D",
    quantity="mistakes",
    requires=("R", "T", "m", "comparators"),
    reference="Freund & Schapire 1999, Thm 2; docs/bounds.md section 2",
    formula="min_(u, gamma) ((R + D(u, gamma))/gamma)^2",
    value=_freund_schapire,
    trivial=lambda s: float(s["T"]),
    range=lambda s: (0.0, float(s["T"])),  # a count of mistakes in T rounds
    trivial_text="T, the rounds presented",
)

PERCEPTRON_BOUNDS: tuple[Bound, ...] = (NOVIKOFF, HINGE, FREUND_SCHAPIRE)


def _batch_passes(s: Stats) -> float:
    # passes made <= updates + 1 (every pass before the last makes an update) <= Novikoff's floor + 1
    return float(_novikoff(s) + 1)


BATCH_PASSES = Bound(
    name="batch_passes",
    title="Batch passes",
    learner="batch_perceptron",
    guarantee="D",
    quantity="passes_made",
    requires=("R", "gamma_lo", "separable", "pass_limit"),
    reference="[S1] slides 2-6 (the batch form stops after a clean pass) with Novikoff's bound; docs/bounds.md section 1",
    formula="floor((R/gamma_lo)^2) + 1",
    value=_batch_passes,
    applies=NOVIKOFF.applies,
    trivial=lambda s: float(s["pass_limit"]),
    range=lambda s: (0.0, float(s["pass_limit"])),  # a count of passes
    trivial_text="the pass limit (algorithm.passes): the learner stops there whatever the data",
)

# Its own bound; the Perceptron's bound its updates too (BatchPerceptron.judged_as): they are the
# Perceptron's updates on the concatenated passes.
BATCH_PERCEPTRON_BOUNDS: tuple[Bound, ...] = (BATCH_PASSES,)
