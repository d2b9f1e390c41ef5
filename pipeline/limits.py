"""Distribution-free limits of a mean: tests by betting (docs/bounds.md, "How a verdict is decided").

The (E) and (P) verdicts decide with these tests and nothing else. Each is a test of one null about the mean
of independent values that lie in a known range, valid whatever their distribution (skewed, heavy-tailed
inside the range, a rare large value): no normality is assumed anywhere.

The test is the hedged capital process of Waudby-Smith & Ramdas ("Estimating means of bounded random
variables by betting", JRSS-B 2024), one-sided. To test H0: mean >= m with values x_i in [lo_i, hi_i], a
bettor starts with capital 1 and stakes lambda_i on "x_i below m" at each step:

    K_t = prod_{i <= t} (1 + lambda_i (m_i - x_i) / (hi_i - lo_i)),    0 <= lambda_i <= c / (1 - u_i),

with u_i = (m_i - lo_i) / (hi_i - lo_i) the threshold on the unit scale, so that every factor stays
non-negative. lambda_i depends only on the values before step i (a predictable bet: the plug-in of the
running mean and variance, tuned to the planned number of values n). Under H0 the capital is a
non-negative supermartingale, and by Ville's inequality P(max_t K_t >= 1/alpha) <= alpha: the test rejects
H0 when the capital ever reaches 1/alpha, and its p-value is 1 / max_t K_t. Because the bound is on the
*maximum* over t, the test stays valid when values are added and the test re-run (optional stopping), which
is what a sweep that adds seeds until a claim is decided needs.

Each value may have its own range and threshold (the bound and the range of a run may depend on its data):
H0 is then "the mean of every x_i, given its range, is >= its m_i", the per-run form of the theorem. With one
range and one threshold it is the classical test of the mean of i.i.d. values.

Only one end of the range is needed for each side: "mean below m" needs the upper end hi (a rare large value
could otherwise hide above any sample), "mean above m" the lower end lo (a non-negative quantity has lo = 0).
A side whose end is infinite cannot be tested: :func:`test_below` / :func:`test_above` return p = 1 with
``decidable`` False.

The limits reported beside a verdict (:func:`upper_limit`, :func:`lower_limit`) are the ends of the set of
thresholds the test does not reject (on a grid of the range, rounded outwards). Nothing here imports the
package: it is a foundation, like :mod:`pipeline.verdicts` which uses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
TRUNCATION = 0.75  # c: the largest fraction of the capital at risk on one value (Waudby-Smith & Ramdas use 1/2 or 3/4)
GRID = 2049  # thresholds per range when a limit is computed
BLOCK = 1 << 20  # values x thresholds in one block of a limit's tests (8 MB a float64 array)


@dataclass(frozen=True)
class Test:
    """The outcome of one test: ``p`` (1 / the largest capital), ``reject`` (p <= alpha), ``decidable`` (the
    range end the test needs is finite), ``first`` (the number of values at which the capital first reached
    1/alpha: where a sequential sweep could have stopped; None when it never did)."""

    p: float
    reject: bool
    decidable: bool
    first: int | None = None


def _as_arrays(x, lo, hi, m):  # noqa: ANN001, ANN202
    x = np.asarray(x, dtype=np.float64).ravel()
    shape = x.shape
    lo, hi, m = (np.broadcast_to(np.asarray(v, dtype=np.float64), shape).astype(np.float64) for v in (lo, hi, m))
    return x, lo, hi, m


def _log_capital(payoff: np.ndarray, cap: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """log K_t for t = 1..len(payoff), where ``payoff`` in [-1, cap_scale] is (threshold - value) on the unit
    scale and ``cap`` the largest admissible bet at each step (columns: thresholds tested at once)."""
    t = payoff.shape[0]
    # the predictable plug-in: lambda_i from the values before i (a prior of mean 1/2, variance 1/4 on the unit scale)
    z = -payoff  # value - threshold: its running variance is the values' variance
    csum = np.cumsum(z, axis=0)
    idx = np.arange(1, t + 1, dtype=np.float64).reshape((-1,) + (1,) * (payoff.ndim - 1))
    mean_prev = np.concatenate([np.zeros((1,) + payoff.shape[1:]), csum[:-1] / idx[:-1]], axis=0)
    sq = (z - mean_prev) ** 2
    var = (0.25 + np.concatenate([np.zeros((1,) + payoff.shape[1:]), np.cumsum(sq, axis=0)[:-1]], axis=0)) / idx
    lam = np.sqrt(2.0 * math.log(1.0 / alpha) / (max(n, 1) * var))
    lam = np.minimum(lam, cap)
    with np.errstate(divide="ignore"):
        return np.cumsum(np.log1p(lam * payoff), axis=0)


def _p_value(best: float) -> float:
    """The p-value of a capital process whose largest log-capital is ``best`` (Ville's inequality)."""
    return min(1.0, math.exp(-best)) if best > 0 else 1.0


def _outcome(log_k: np.ndarray, alpha: float) -> Test:
    p = _p_value(float(np.max(log_k)))
    crossed = np.nonzero(log_k >= math.log(1.0 / alpha))[0]
    return Test(p, p <= alpha, True, int(crossed[0]) + 1 if crossed.size else None)


def _unit(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, m: np.ndarray):  # noqa: ANN202
    w = hi - lo
    return (x - lo) / w, (m - lo) / w


def test_below(x, m, lo, hi, alpha: float = ALPHA, n: int | None = None) -> Test:  # noqa: ANN001
    """Test H0: mean >= m (reject: the mean is below m) from values ``x`` in [lo, hi] (arrays or scalars,
    per value). ``n`` is the planned number of values (default len(x)); the test stays valid at any n."""
    x, lo, hi, m = _as_arrays(x, lo, hi, m)
    if x.size == 0:
        return Test(1.0, False, bool(np.all(np.isfinite(hi))))
    if not np.all(np.isfinite(hi)) or not np.all(np.isfinite(lo)):
        # with lo = -inf and hi finite, flip to the side with a finite end: -x in [-hi, inf), test "mean of -x above -m"
        if np.all(np.isfinite(hi)):
            return test_above(-x, -m, -hi, np.full_like(hi, np.inf), alpha, n)
        return Test(1.0, False, False)
    if np.any(m > hi):  # a threshold above the range's top: every mean is below it
        return Test(0.0, True, True, 1)
    u_x, u_m = _unit(x, lo, hi, m)
    u_m = np.clip(u_m, 0.0, 1.0)
    cap = np.where(u_m < 1.0, TRUNCATION / np.maximum(1.0 - u_m, 1e-300), 1e6)  # at hi itself: any value below refutes H0
    return _outcome(_log_capital(u_m - u_x, cap, n or x.size, alpha), alpha)


def test_above(x, m, lo, hi, alpha: float = ALPHA, n: int | None = None) -> Test:  # noqa: ANN001
    """Test H0: mean <= m (reject: the mean is above m) from values ``x`` in [lo, hi]; ``hi`` may be infinite
    (a quantity bounded below only, e.g. non-negative)."""
    x, lo, hi, m = _as_arrays(x, lo, hi, m)
    if x.size == 0:
        return Test(1.0, False, bool(np.all(np.isfinite(lo))))
    if not np.all(np.isfinite(lo)):
        if np.all(np.isfinite(hi)):
            return test_below(-x, -m, -hi, -lo, alpha, n)
        return Test(1.0, False, False)
    if np.any(m < lo):  # a threshold below the range's bottom: every mean is above it
        return Test(0.0, True, True, 1)
    scale, u_m, cap = _above_bets(m, lo, hi)
    z = (x - lo) / scale
    return _outcome(_log_capital(z - u_m, cap, n or x.size, alpha), alpha)


def _above_bets(m, lo, hi):  # noqa: ANN001, ANN202
    """The bets of :func:`test_above` at the thresholds ``m`` (elementwise with ``lo``, ``hi``): the scale of
    a bet (the range where it is finite, else the distance from lo to the threshold), the threshold on that
    scale, and the largest admissible bet. :func:`lower_limit` takes its grid's from here too."""
    scale = np.where(np.isfinite(hi), hi - lo, np.maximum(m - lo, 1e-12 * np.maximum(np.abs(lo), 1.0)))
    u_m = (m - lo) / scale
    cap = np.where(u_m > 0.0, TRUNCATION / np.maximum(u_m, 1e-300), np.inf)
    cap = np.where(np.isfinite(cap), cap, 1e6)  # a threshold at lo itself: any value above it refutes H0
    return scale, u_m, cap


def _blocks(rows: int) -> list[tuple[int, int]]:
    """The blocks [a, b) of grid thresholds tested at once: a block of (values x thresholds) holds at most
    :data:`BLOCK` numbers (at least one threshold), so a limit's memory does not grow with the number of values
    times the grid. Each threshold's column is computed alone (sums run down the values), so blocks of any
    width give the same bits."""
    step = max(1, BLOCK // max(rows, 1))
    return [(a, min(a + step, GRID)) for a in range(0, GRID, step)]


def upper_limit(x, lo, hi, alpha: float = ALPHA) -> float:  # noqa: ANN001
    """The one-sided (1 - alpha) upper confidence limit of the mean of ``x`` in [lo, hi] (scalars): the largest
    threshold the test of "mean >= threshold" does not reject, on a grid of the range (rounded up); inf when
    ``hi`` is infinite."""
    x = np.asarray(x, dtype=np.float64).ravel()
    if not (math.isfinite(lo) and math.isfinite(hi)) or x.size == 0:
        return math.inf if x.size == 0 or not math.isfinite(hi) else float(hi)
    if hi <= lo:
        return float(hi)
    grid = np.linspace(lo, hi, GRID)
    u = (grid - lo) / (hi - lo)
    ux = ((x - lo) / (hi - lo))[:, None]
    cap = np.where(u < 1.0, TRUNCATION / np.maximum(1.0 - u, 1e-300), 1e6)[None, :]
    kept = np.empty(GRID, dtype=bool)
    for a, b in _blocks(x.size):
        log_k = _log_capital(u[None, a:b] - ux, np.broadcast_to(cap[:, a:b], (x.size, b - a)), x.size, alpha)
        kept[a:b] = np.max(log_k, axis=0) < math.log(1.0 / alpha)
    if not kept.any():
        return float(lo)
    i = int(np.nonzero(kept)[0].max())
    return float(grid[min(i + 1, grid.size - 1)])


def lower_limit(x, lo, hi, alpha: float = ALPHA) -> float:  # noqa: ANN001
    """The one-sided (1 - alpha) lower confidence limit of the mean of ``x`` in [lo, hi] (``hi`` may be
    infinite): the smallest threshold the test of "mean <= threshold" does not reject (rounded down);
    -inf when ``lo`` is infinite. With ``hi`` infinite, every threshold of the grid is tested as
    :func:`test_above` tests it (its scale, bets and p-value, the same operations column by column), in
    blocks of thresholds rather than one call per threshold."""
    x = np.asarray(x, dtype=np.float64).ravel()
    if not math.isfinite(lo) or x.size == 0:
        return -math.inf
    if math.isfinite(hi):
        return -upper_limit(-x, -hi, -lo, alpha)
    top = float(max(x.max(), lo)) + 1e-300
    grid = np.linspace(lo, top, GRID)
    scale, u_m, cap = _above_bets(grid, lo, math.inf)  # test_above's bets at each threshold
    kept = np.empty(GRID, dtype=bool)
    for a, b in _blocks(x.size):
        z = (x[:, None] - lo) / scale[None, a:b]
        log_k = _log_capital(z - u_m[None, a:b], np.broadcast_to(cap[None, a:b], z.shape), x.size, alpha)
        for j, best in enumerate(np.max(log_k, axis=0).tolist(), start=a):  # _outcome's p, column by column
            kept[j] = not _p_value(best) <= alpha
    i = int(np.argmax(kept)) if kept.any() else grid.size - 1
    return float(grid[max(i - 1, 0)])
