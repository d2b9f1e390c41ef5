"""Row-level judging: what one run concludes about one bound, and the intervals every verdict quotes.

What a job computes with (``pipeline.bounds.base`` judges each row with :func:`judge_row`, ``pipeline.risk``
brackets its held-out risks with :func:`t_limits`, :func:`binomial_limits` and :func:`hoeffding_half_width`),
so it belongs to a job's identity (``pipeline.job.identity``): an edit here reruns the jobs. The sweep-level rules
(settings, seeds, the betting tests of ``pipeline.judging.limits``, claims) are in ``pipeline.judging.verdicts``, which a job
never imports: an edit there re-judges the sweeps from their tables and reuses every finished job.
Nothing here imports the package.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

HOLDS, VIOLATED, INCONCLUSIVE, NOT_APPLICABLE = "holds", "violated", "inconclusive", "not applicable"
VERDICTS = (HOLDS, VIOLATED, INCONCLUSIVE, NOT_APPLICABLE)
LEVEL = 0.95  # confidence of every one-sided limit
ALPHA = round(1.0 - LEVEL, 12)  # 0.05
MAX_N = 100_000  # the largest number of seeds or runs an inconclusive verdict asks for


# --- Safe arithmetic: every mean and quotient quoted as evidence ---------------------------------------

def mean_of(values: Any) -> float:
    """The mean of ``values`` (a pandas column skips NaN, as ``Series.mean`` does), never overflowing: finite values
    near the largest double (two of 1e308 average 1e308, not inf) are averaged on the scale of the largest of
    them. Infinite only when a value is; NaN for no value (or +inf with -inf). Ordinary values give exactly
    what ``values.mean()`` gives: the one path for every mean a verdict or its evidence quotes."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(values.mean()) if hasattr(values, "mean") else float(np.mean(np.asarray(values, dtype=np.float64)))
    if math.isfinite(mean):
        return mean
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    if not x.size or not np.isfinite(x).all():
        return mean
    scale = float(np.max(np.abs(x)))
    return float(scale * np.mean(x / scale))


def quotient(a: float, b: float) -> float:
    """``a / b`` as a verdict's evidence quotes it, never raising: over 0 it is +inf for a > 0, -inf for a < 0
    and 0 for a = 0 (no run above a bound of 0); NaN when either is NaN; inf / inf is NaN."""
    a, b = float(a), float(b)
    if b == 0.0:
        return math.nan if math.isnan(a) else math.copysign(math.inf, a) if a else 0.0
    return a / b


# --- Intervals (the only place they are computed) ----------------------------------------------------

def t_limits(values: Iterable[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and the one-sided ``level`` lower and upper Student t limits of the mean ((-inf, inf) for
    fewer than 2 values). Finite values near the largest double are taken on the scale of the largest of them
    (:func:`mean_of`): no overflow to an infinite mean or a NaN spread."""
    from scipy.special import stdtrit  # what scipy.stats.t.ppf computes, without importing scipy.stats (~0.5 s)

    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64).ravel()
    mean = mean_of(x) if x.size else math.nan
    if x.size < 2:
        return mean, -math.inf, math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        sd = float(x.std(ddof=1))
    if not math.isfinite(sd) and np.isfinite(x).all():
        scale = float(np.max(np.abs(x)))
        sd = scale * float((x / scale).std(ddof=1))
    half = float(stdtrit(x.size - 1, level)) * sd / math.sqrt(x.size)
    return mean, mean - half, mean + half


def hoeffding_half_width(n: int, width: float, level: float = LEVEL) -> float:
    """One-sided Hoeffding deviation of a mean of ``n`` independent values each in a range of ``width``:
    P(mean - E mean >= h) <= exp(-2 n h^2 / width^2) = 1 - level."""
    return width * math.sqrt(math.log(1.0 / (1.0 - level)) / (2.0 * n)) if n else math.inf


def binomial_limits(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """One-sided ``level`` Clopper-Pearson lower and upper limits of a rate from ``k`` events in ``n`` trials
    (the two ends of the exact two-sided interval at 2 level - 1)."""
    from scipy.stats import beta

    if n == 0:
        return 0.0, 1.0
    k, n = int(k), int(n)
    lo = float(beta.ppf(1.0 - level, k, n - k + 1)) if k > 0 else 0.0
    hi = float(beta.ppf(level, k + 1, n - k)) if k < n else 1.0
    return lo, hi


def mean_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of its two-sided ``level`` t interval (0 for fewer than 2 values): the band
    of the figures and comparison tables."""
    mean, lo, hi = t_limits(values, 0.5 + level / 2.0)
    return mean, (0.0 if not math.isfinite(hi) else hi - mean)


# --- Rows ---------------------------------------------------------------------------------------------

def judge_row(measured: float, theoretical: float, trivial: float,
              prefix: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """The columns a row's verdict rests on: ``ratio`` (at the last step), ``max_ratio_over_t`` (the
    largest measured_t / bound_t over the judged steps), ``holds`` (no judged step above its bound),
    ``informative`` (bound < trivial value). ``prefix`` is (measured_t, bound_t) over every step for an
    anytime bound, else None (judged at the last step only).

    A value that is not a number is never compared: ``holds`` is then None, with the reason.
    """
    measured, theoretical, trivial = float(measured), float(theoretical), float(trivial)
    if math.isnan(measured) or math.isnan(theoretical):
        return {"ratio": math.nan, "max_ratio_over_t": math.nan, "holds": None, "informative": False,
                "invalid": f"not a number: measured {measured}, bound {theoretical}"}
    ratio = _ratio(measured, theoretical)
    holds, worst = measured <= theoretical, ratio
    if prefix is not None:
        q, b = np.asarray(prefix[0], dtype=np.float64), np.asarray(prefix[1], dtype=np.float64)
        if np.isnan(q).any() or np.isnan(b).any():
            return {"ratio": ratio, "max_ratio_over_t": math.nan, "holds": None, "informative": False,
                    "invalid": "not a number in the per-step trace"}
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(b > 0, q / np.where(b > 0, b, 1.0), np.where(q <= b, 0.0, np.inf))
        worst = float(r.max()) if r.size else ratio
        holds = bool(np.all(q <= b)) and holds
    informative = bool(theoretical < trivial) if not math.isnan(trivial) else False
    return {"ratio": ratio, "max_ratio_over_t": worst, "holds": bool(holds), "informative": informative, "invalid": None}


def _ratio(measured: float, theoretical: float) -> float:
    if theoretical > 0:
        return measured / theoretical
    return 0.0 if measured <= theoretical else math.inf


def row_phrase(row: Any) -> str:
    """The verdict words of one row for the job's log line: (D) holds / VIOLATED, (E) and (P) how the row
    will be judged; 'vacuous' where the bound is not below the trivial value."""
    from pipeline.judging.guarantees import guarantee

    words = guarantee(row.guarantee).row_words(row)
    if not row.informative:
        words += f"; VACUOUS: bound >= trivial value {row.trivial:.4g}"
    return words
