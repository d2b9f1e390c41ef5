"""Distribution-free limits of a mean: tests by betting (docs/bounds.md, "How a verdict is decided").

The (E) and (P) verdicts decide with these tests and nothing else. Each is a test of one null about the mean
of independent values that lie in a known range, valid whatever their distribution (skewed, heavy-tailed
inside the range, a rare large value): no normality is assumed anywhere.

The test is a one-sided test by betting after Waudby-Smith & Ramdas ("Estimating means of bounded random
variables by betting", JRSS-B 2024). To test H0: mean >= m with values x_i in [lo_i, hi_i], a bettor starts
with capital 1 and stakes lambda_i on "x_i below m" at each step:

    K_t = prod_{i <= t} (1 + lambda_i (m_i - x_i) / (hi_i - lo_i)),    0 <= lambda_i < 1 / (1 - u_i),

with u_i = (m_i - lo_i) / (hi_i - lo_i) the threshold on the unit scale, so that every factor stays
positive. The capital reported is the average of a few such bettors (:data:`COMPONENTS`), each betting
min(f g_i, c / (1 - u_i)): g_i the growth-rate plug-in (the running mean of the payoffs over their running
mean square, from the values before i and one pseudo-value; Waudby-Smith & Ramdas' aGRAPA), f a multiple of
it and c a cap, up to 0.999 of the largest admissible bet, so that near-constant values far below the
threshold bet near the Kelly maximum while a cautious bettor keeps the capital when a value lands near the
top. Every bet depends only on the values before it and on fixed constants, never on a planned number of
values: the capital of a prefix is the prefix of the capital of its extension. Under H0 each bettor's capital
is a non-negative supermartingale, and so is their average; by Ville's inequality P(max_t K_t >= 1/alpha) <=
alpha. The test rejects H0 when the capital ever reaches 1/alpha, and its p-value is 1 / max_t K_t. Because
the bound is on the *maximum* over t and the bets ignore any planned count, judging a prefix of the values
and then the extended sequence (values added in rounds, a sweep re-run with a larger seed budget, a table
judged again after more seeds) is one test: it stays valid under optional stopping and growth, with the
values in a fixed order (seed order in :mod:`pipeline.judging.verdicts`). No test of the mean can need fewer values
than :func:`floor_seeds`; :func:`seeds_to_decide` is the number this one needs if the observed values recur.

Each value may have its own range and threshold (the bound and the range of a run may depend on its data):
H0 is then "the mean of every x_i, given its range, is >= its m_i", the per-run form of the theorem. With one
range and one threshold it is the classical test of the mean of i.i.d. values.

Only one end of the range is needed for each side: "mean below m" needs the upper end hi (a rare large value
could otherwise hide above any sample), "mean above m" the lower end lo (a non-negative quantity has lo = 0).
A side whose end is infinite cannot be tested: :func:`test_below` / :func:`test_above` return p = 1 with
``decidable`` False.

The limits reported beside a verdict (:func:`upper_limit`, :func:`lower_limit`) are the ends of the set of
thresholds the test does not reject (on a grid of the range, rounded outwards). Nothing here imports the
package: it is a foundation, like :mod:`pipeline.judging.verdicts` which uses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Values = np.ndarray | float
"""Values, or the ends of their ranges: an array (one per value) or a number (the same for every value)."""

ALPHA = 0.05
# the bettors averaged into the capital: (f, c) bets min(f x the plug-in, c x the largest admissible bet)
COMPONENTS = ((1.0, 0.6), (1.0, 0.99), (4.0, 0.999))
GRID = 2049  # thresholds per range when a limit is computed
BLOCK = 1 << 20  # values x thresholds in one block of a limit's tests (8 MB a float64 array)
BETA = 0.2  # the miss rate of the power a floor is stated at (power 0.8)


@dataclass(frozen=True)
class Test:
    """The outcome of one test: ``p`` (1 / the largest capital), ``reject`` (p <= alpha), ``decidable`` (the
    range end the test needs is finite), ``first`` (the number of values at which the capital first reached
    1/alpha: where a sequential sweep could have stopped; None when it never did)."""

    p: float
    reject: bool
    decidable: bool
    first: int | None = None


def _as_arrays(x: Values, lo: Values, hi: Values, m: Values) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64).ravel()
    shape = x.shape
    lo, hi, m = (np.broadcast_to(np.asarray(v, dtype=np.float64), shape).astype(np.float64) for v in (lo, hi, m))
    return x, lo, hi, m


def _log_capital(payoff: np.ndarray, top: np.ndarray, n: int | None = None, alpha: float | None = None) -> np.ndarray:
    """log K_t for t = 1..len(payoff) (rows: values in order; columns: thresholds or sequences tested at once),
    where ``payoff`` >= -1 / ``top`` is (threshold - value) on the unit scale and ``top`` the largest
    admissible bet (1 / (1 - u)) at each cell. K_t is the average of the :data:`COMPONENTS` bettors' capitals.
    ``n`` and ``alpha`` are accepted for compatibility and change nothing: the bet on a value depends only on
    the values before it."""
    payoff = np.asarray(payoff, dtype=np.float64)
    top = np.broadcast_to(top, payoff.shape)
    # the plug-in g_i = (sum of payoffs before i + y0) / (sum of their squares + y0^2), with a pseudo-value
    # y0 = 1 / (2 top) (half-way to the unfavourable end): g_1 = 2 top, so each bettor opens at its cap
    y0 = 0.5 / top
    g = np.empty_like(payoff)
    s2 = np.empty_like(payoff)
    g[0] = 0.0
    s2[0] = 0.0
    np.cumsum(payoff[:-1], axis=0, out=g[1:])
    np.cumsum(payoff[:-1] * payoff[:-1], axis=0, out=s2[1:])
    return _capital(_plug_in(g, s2, y0), payoff, top)[0]


def _plug_in(g: np.ndarray, s2: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """The growth-rate plug-in, in place in ``g``: (the payoffs' sum before each value + y0) over (their squares'
    sum + y0^2), from those sums (``g``, ``s2``, which this overwrites) and the pseudo-value ``y0``."""
    g += y0
    np.maximum(g, 0.0, out=g)
    s2 += y0 * y0
    np.maximum(s2, 1e-300, out=s2)  # (a cap of 1e300 makes y0^2 underflow: g is then the cap)
    g /= s2
    return g


def _capital(g: np.ndarray, payoff: np.ndarray, top: np.ndarray,
             before: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """log K_t, the average of the :data:`COMPONENTS` bettors' capitals, given the plug-in ``g``, the payoffs and
    the largest bets; ``before``: each bettor's log-capital before the first row (one row per bettor), added to
    its first term. Returns the log-capital and each bettor's log-capital after the last row."""
    logs: list[np.ndarray] = []
    for k, (f, c) in enumerate(COMPONENTS):
        log_k = np.multiply(g, f)
        np.minimum(log_k, c * top, out=log_k)
        log_k *= payoff
        np.log1p(log_k, out=log_k)
        if before is not None:
            log_k[0] += before[k]
        logs.append(np.cumsum(log_k, axis=0, out=log_k))
    after = np.array([log_k[-1] for log_k in logs])
    big = logs[0].copy()
    for log_k in logs[1:]:
        np.maximum(big, log_k, out=big)
    total = np.zeros_like(big)
    for log_k in logs:
        log_k -= big
        total += np.exp(log_k, out=log_k)
    total *= 1.0 / len(COMPONENTS)
    capital: np.ndarray = big + np.log(total, out=total)
    return capital, after


def _top_below(u: np.ndarray) -> np.ndarray:
    """The largest admissible bet on "value below the threshold" at thresholds ``u`` on the unit scale."""
    return np.where(u < 1.0, 1.0 / np.maximum(1.0 - u, 1e-300), 1e6)  # at hi itself: any value below refutes H0


def _p_value(best: float) -> float:
    """The p-value of a capital process whose largest log-capital is ``best`` (Ville's inequality)."""
    return min(1.0, math.exp(-best)) if best > 0 else 1.0


def _outcome(log_k: np.ndarray, alpha: float) -> Test:
    p = _p_value(float(np.max(log_k)))
    crossed = np.nonzero(log_k >= math.log(1.0 / alpha))[0]
    return Test(p, p <= alpha, True, int(crossed[0]) + 1 if crossed.size else None)


def _unit(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = hi - lo
    return (x - lo) / w, (m - lo) / w


def test_below(x: Values, m: Values, lo: Values, hi: Values, alpha: float = ALPHA, n: int | None = None) -> Test:
    """Test H0: mean >= m (reject: the mean is below m) from values ``x`` in [lo, hi] (arrays or scalars,
    per value), in their order. ``n`` (a planned number of values) is accepted for compatibility and changes
    nothing: the bets depend only on the values before each, so testing a prefix and then its extension is one
    test (anytime valid)."""
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
    return _outcome(_log_capital(u_m - u_x, _top_below(u_m)), alpha)


def test_above(x: Values, m: Values, lo: Values, hi: Values, alpha: float = ALPHA, n: int | None = None) -> Test:
    """Test H0: mean <= m (reject: the mean is above m) from values ``x`` in [lo, hi]; ``hi`` may be infinite
    (a quantity bounded below only, e.g. non-negative). ``n`` is ignored, as in :func:`test_below`."""
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
    return _outcome(_log_capital(z - u_m, cap), alpha)


def _above_bets(m: Values, lo: Values, hi: Values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bets of :func:`test_above` at the thresholds ``m`` (elementwise with ``lo``, ``hi``): the scale of
    a bet (the range where it is finite, else the distance from lo to the threshold), the threshold on that
    scale, and the largest admissible bet (1 / the threshold on that scale). :func:`lower_limit` takes its
    grid's from here too."""
    scale = np.where(np.isfinite(hi), hi - lo, np.maximum(m - lo, 1e-12 * np.maximum(np.abs(lo), 1.0)))
    u_m = (m - lo) / scale
    cap = np.where(u_m > 0.0, 1.0 / np.maximum(u_m, 1e-300), np.inf)
    cap = np.where(np.isfinite(cap), cap, 1e6)  # a threshold at lo itself: any value above it refutes H0
    return scale, u_m, cap


def floor_seeds(mu: float, b: float, lo: float, hi: float, alpha: float = ALPHA, beta: float = BETA) -> float:
    """The information floor: no test of "mean >= b" at level ``alpha`` for values in [lo, hi] can reject with
    probability 1 - ``beta`` from fewer independent values than

        ln((1 - beta) / alpha) / -ln(1 - (b - mu) / (hi - mu))

    when their mean is ``mu``. (Under the null law with mass 1 - q at mu and q = (b - mu) / (hi - mu) at hi,
    whose mean is b, n values all equal to mu occur with probability (1 - q)^n, and a test that rejects them
    with probability 1 - beta rejects under that null with probability (1 - beta)(1 - q)^n, which must not
    exceed alpha.) It is the floor for values that all equal mu, the most favourable case; values spread
    around mu need more. inf when mu >= b or hi is infinite, 0 when b >= hi > mu (one value decides). On the
    unit scale of [lo, hi] the floor does not depend on lo."""
    if not mu < b:
        return math.inf
    if not math.isfinite(hi):
        return math.inf
    if b >= hi:
        return 0.0
    q = (b - mu) / (hi - mu)
    return math.log((1.0 - beta) / alpha) / -math.log1p(-q)


def seeds_to_decide(x: Values, b: Values, lo: Values, hi: Values, alpha: float = ALPHA,
                    most: int = 100_000) -> int | None:
    """The number of values at which :func:`test_below` would reject "mean >= b" if the observed values
    ``x`` recurred in their order (x_1..x_k, x_1..x_k, ...; per-value ``b``, ``lo``, ``hi`` repeat with them):
    the first time the capital of that sequence reaches 1/alpha. The bets depend on no planned count, so this
    is the smallest n at which the test of the first n of those values rejects (one pass, no bisection). None
    when even ``most`` values do not decide (the observed mean not below b, or no finite top)."""
    x, lo, hi, b = _as_arrays(x, lo, hi, b)
    if x.size == 0:
        return None
    for length in sorted({min(most, 1 << 10), min(most, 1 << 14), most}):  # a prefix's crossing is the whole's
        idx = np.arange(length) % x.size
        t = test_below(x[idx], b[idx], lo[idx], hi[idx], alpha)
        if t.reject:
            return t.first
    return None


def floor_of(x: Values, b: Values, lo: Values, hi: Values, alpha: float = ALPHA, beta: float = BETA) -> float:
    """:func:`floor_seeds` at observed values ``x`` against the bound ``b`` (per value, like ``lo`` and
    ``hi``): at their mean and the bound's with one range; with ranges that differ, on the unit scale of each
    value's range (the mean of (x - lo) / (hi - lo) against the mean of (b - lo) / (hi - lo)). inf when a top
    is infinite (no number of values bounds the mean from above) or the mean is not below the bound."""
    x, lo, hi, b = _as_arrays(x, lo, hi, b)
    if x.size == 0 or not np.all(np.isfinite(hi)):
        return math.inf
    if np.all(lo == lo[0]) and np.all(hi == hi[0]):
        return floor_seeds(float(x.mean()), float(b.mean()), float(lo[0]), float(hi[0]), alpha, beta)
    if not np.all(np.isfinite(lo)):
        return math.inf
    w = hi - lo
    return floor_seeds(float(np.mean((x - lo) / w)), float(np.mean((b - lo) / w)), 0.0, 1.0, alpha, beta)


COLUMNS = 64  # thresholds of a limit tested together, from the side the limit is searched from
FIRST_ROWS = 64  # values of a limit's first chunk; each next chunk twice the last (at most BLOCK numbers)


def _extreme_kept(payoff: Callable[[int, int, np.ndarray], np.ndarray], top: np.ndarray, rows: int,
                  rejects: Callable[[np.ndarray], np.ndarray], last: bool) -> int | None:
    """The last (``last``) or first grid threshold the test does not reject, None when it rejects them all.
    Column j's values are ``payoff(a, b, cols)`` (rows a..b-1 of the columns ``cols``, as :func:`_log_capital`
    takes them), its largest bet ``top[j]``. The columns are tested :data:`COLUMNS` at a time from the end the
    answer is searched from, and the search stops at the first group holding a kept threshold: the groups
    beyond it cannot change the answer. :func:`_rejected` decides each group as the whole capital would."""
    width = top.shape[0]
    starts = range(0, width, COLUMNS)
    for a in (reversed(starts) if last else starts):
        cols = np.arange(a, min(a + COLUMNS, width))
        kept = cols[~_rejected(payoff, top, rows, rejects, cols)]
        if kept.size:
            return int(kept[-1] if last else kept[0])
    return None


def _rejected(payoff: Callable[[int, int, np.ndarray], np.ndarray], top: np.ndarray, rows: int,
              rejects: Callable[[np.ndarray], np.ndarray], columns: np.ndarray) -> np.ndarray:
    """Whether the test rejects each threshold (column) of ``columns``; ``rejects(best)`` tells from a column's
    largest log-capital whether its test rejects (the test's own comparison, so the same decisions). The
    capital is :func:`_log_capital`'s, computed down the values in chunks, each chunk's running sums continuing
    from the last (each sum's operations in the same order: a column's decision is the same whatever the
    chunks), and a column is dropped once its capital has reached the bar: later values cannot undo a
    rejection (the test is on the running maximum). A threshold far from the mean crosses within a few values,
    so it costs a few values, not all of them. A chunk holds at most :data:`BLOCK` numbers (at least one row)."""
    width = top.shape[0]
    rejected = np.zeros(width, dtype=bool)
    best = np.full(width, -np.inf)
    sums, squares = np.zeros(width), np.zeros(width)  # the payoffs before the chunk, and their squares
    logs = np.zeros((len(COMPONENTS), width))  # each bettor's log-capital before the chunk
    cols = columns
    a, step = 0, FIRST_ROWS
    while a < rows and cols.size:
        b = min(rows, a + max(1, min(step, BLOCK // cols.size)))
        step *= 2
        p = np.asarray(payoff(a, b, cols), dtype=np.float64)
        t = np.broadcast_to(top[cols], p.shape)
        # the running sums of the payoffs before each value: the last chunk's total, then this chunk's
        g, s2 = np.empty_like(p), np.empty_like(p)
        g[0], s2[0] = sums[cols], squares[cols]
        if p.shape[0] > 1:
            head = p[:-1].copy()
            head[0] += g[0]
            np.cumsum(head, axis=0, out=g[1:])
            head = p[:-1] * p[:-1]
            head[0] += s2[0]
            np.cumsum(head, axis=0, out=s2[1:])
        sums[cols] = g[-1] + p[-1]
        squares[cols] = s2[-1] + p[-1] * p[-1]
        capital, logs[:, cols] = _capital(_plug_in(g, s2, 0.5 / t), p, t, logs[:, cols])  # y0 as in _log_capital
        best[cols] = np.maximum(best[cols], np.max(capital, axis=0))
        done = rejects(best[cols])
        rejected[cols[done]] = True
        cols = cols[~done]
        a = b
    out: np.ndarray = rejected[columns]
    return out


def upper_limit(x: Values, lo: Values, hi: Values, alpha: float = ALPHA) -> float:
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
    cap = _top_below(u)
    bar = math.log(1.0 / alpha)
    i = _extreme_kept(lambda a, b, cols: u[None, cols] - ux[a:b], cap, x.size, lambda best: best >= bar, last=True)
    if i is None:
        return float(lo)
    return float(grid[min(i + 1, grid.size - 1)])


def lower_limit(x: Values, lo: Values, hi: Values, alpha: float = ALPHA) -> float:
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
    col = x[:, None]

    def rejects(best: np.ndarray) -> np.ndarray:  # _outcome's p <= alpha, column by column
        return np.array([_p_value(b) <= alpha for b in best.tolist()], dtype=bool)

    first = _extreme_kept(lambda a, b, cols: (col[a:b] - lo) / scale[None, cols] - u_m[None, cols], cap, x.size,
                          rejects, last=False)
    i = grid.size - 1 if first is None else first
    return float(grid[max(i - 1, 0)])
