"""Certified statistics of the vectors a learner sees: radius, separability and the best margin.

Every bound in :mod:`pipeline.bounds` is evaluated from the statistics measured here, on exactly the
array handed to the learner (docs/bounds.md section 0). :class:`Stats` holds them: ``R`` an upper bound of
max_i ||x_i||, ``gamma_lo`` a lower bound of the margin attained by an explicit witness direction and
``gamma_hi`` an upper bound of the best margin from an explicit dual witness. Their arithmetic, rigorous in
floating point and at any scale, is :mod:`pipeline.solvers.certified`; the max-margin search that proposes
the witnesses and decides separability from HiGHS's proven answers is :mod:`pipeline.solvers.max_margin`.
Here: :func:`certify` (the statistics from given witnesses), :func:`certify_sample` (any labelled sample,
through the max-margin search) and its cache. Data that are zero throughout, or not finite, have no
certificate: :func:`certify` raises :class:`pipeline.params.UserError`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from pipeline import files
from pipeline.numerics import single_thread
from pipeline.params import UserError
from pipeline.solvers import max_margin
from pipeline.solvers.certified import Matrix, _unit_scale, margin_lower, margin_upper, radius, sparse

log = logging.getLogger("boundlab")


class CertificateError(ArithmeticError):
    """A certificate that contradicts itself (gamma_lo > gamma_hi). Both ends are rigorous, so this
    means an assumption of the rounding analysis failed (a bug); the numbers are never reported."""


@dataclass(frozen=True)
class Stats:
    """Certified statistics of a labelled sample (docs/bounds.md sections 1 and 9).

    Attributes
    ----------
    m, d : sample size and dimension of the vectors the learner sees.
    R : rigorous upper bound of max_i ||x_i||.
    gamma_lo, gamma_hi : two-sided certificate gamma_lo <= gamma*(S) <= gamma_hi of the best margin
        gamma*(S) = max_{||w||=1} min_i y_i w.x_i, both ends rigorous; NaN where no certificate exists.
        An inverted pair (gamma_lo > gamma_hi) raises :class:`CertificateError` on construction.
    separable : True when an explicit w has y_i w.x_i > 0 for every i (then gamma_lo > 0).
    gap : relative gap (gamma_hi - gamma_lo) / gamma_hi of the certificate.
    """

    m: int
    d: int
    R: float
    gamma_lo: float
    gamma_hi: float
    separable: bool
    gap: float

    def __post_init__(self) -> None:
        # Checked here, where every certificate is assembled (whole samples, streams, caches), so an
        # inverted interval can never reach a report; NaN ends (no certificate) compare False.
        if self.gamma_lo > self.gamma_hi:
            raise CertificateError(f"inverted margin certificate: gamma_lo = {self.gamma_lo!r} > gamma_hi = "
                                   f"{self.gamma_hi!r} (m = {self.m}, d = {self.d})")

    def as_dict(self) -> dict[str, float | int | bool]:
        return asdict(self)


def _checked_radius(X: Matrix) -> float:
    """:func:`radius`, refusing data without one (a zero sample; a radius beyond float64)."""
    R = radius(X)
    if R == 0.0:
        raise UserError("every vector of the sample is zero (R = 0): there is no radius or margin to certify; "
                        "check the data and their scaling")
    if not math.isfinite(R):
        raise UserError(f"the radius of the data overflows float64 (R > {np.finfo(float).max:.3g}): rescale the data")
    return R


def certify(X: Matrix, y: np.ndarray, w: np.ndarray, alpha: np.ndarray) -> Stats:
    """Certified statistics of (X, y) from a primal witness ``w`` and a dual witness ``alpha``.

    Raises :class:`pipeline.params.UserError` for data that have no certificate (zero throughout, not
    finite, beyond float64's range) and :class:`CertificateError` if the two ends were ever inverted.
    """
    R = _checked_radius(X)
    lo = margin_lower(X, y, w)
    hi = margin_upper(X, y, alpha)
    return Stats(
        m=int(X.shape[0]),
        d=int(X.shape[1]),
        R=R,
        gamma_lo=lo,
        gamma_hi=hi,
        separable=lo > 0,
        gap=(hi - lo) / hi if hi > 0 else math.inf,
    )


# --- Certification of an arbitrary sample (docs/bounds.md section 1, "Real data") ------------------

# 2: gamma_hi charges the rounding of p; solvers see unit-scale data; 3: working set (HiGHS LP, NNLS), other witnesses
CERTIFICATE_VERSION = "working-set-nnls-3"
TARGET_GAP = 1e-6
_SOLVER_WINDOW = 20  # the LP and QP tolerances are absolute: data beyond 2^+-20 reach the solvers at unit scale


def content_hash(X: Matrix, y: np.ndarray) -> str:
    """Content hash of a sample: dtype, shape and bytes (canonical CSR for sparse matrices)."""
    h = hashlib.sha256()
    if sparse.issparse(X):
        X = sparse.csr_matrix(X)
        X.sum_duplicates()
        X.sort_indices()
        parts = [np.array(X.shape), X.indptr, X.indices, X.data, y]
    else:
        parts = [X, y]
    for a in parts:
        a = np.asarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(memoryview(np.ascontiguousarray(a)).cast("B"))  # the bytes, without a copy
    return h.hexdigest()[:16]


def _certify_candidates(X: Matrix, y: np.ndarray, candidates: list[tuple[np.ndarray, np.ndarray]]) -> Stats:
    """:func:`certify` of each (w, alpha) candidate; any w and any alpha >= 0 certify: keep the tighter ends."""
    stats = None
    for w, alpha in candidates:
        better = certify(X, y, w, alpha)
        if stats is None:
            stats = better
        else:
            lo, hi = max(stats.gamma_lo, better.gamma_lo), min(stats.gamma_hi, better.gamma_hi)
            stats = Stats(stats.m, stats.d, stats.R, lo, hi, lo > 0, (hi - lo) / hi if hi > 0 else math.inf)
    return stats


def certify_sample(X: Matrix, y: np.ndarray, cache_dir: Path | None = None) -> Stats:
    """Certified statistics of any labelled sample, computed once per content and cached.

    The hard-margin problem min 1/2||w||^2 s.t. y_i w.x_i >= 1 is solved on a working set of candidate
    support vectors (:func:`pipeline.solvers.max_margin._max_margin`): separability of the working set is
    HiGHS's LP, its optimum an exact active-set solve, and one pass over the whole sample per round adds
    the rows its w violates, until none is left. Its w is the primal witness (gamma_lo, evaluated on every
    row) and its duals, zero outside the working set, the dual witness (gamma_hi) of the two-sided
    certificate, both evaluated rigorously by :func:`certify`. A working set that HiGHS proves not separable
    makes the whole sample non-separable: no margin, gamma_lo = gamma_hi = NaN and ``separable`` False. The
    solvers see the sample scaled by a power of two to unit size when its entries lie beyond 2^+-20
    (their tolerances are absolute).

    Only proven answers become statistics or cache entries: HiGHS's "optimal" (a separating w) or
    "infeasible" (not separable); any other outcome raises :class:`pipeline.solvers.max_margin.SolverError`
    and caches nothing. A cache entry is used only if it is consistent with the sample
    (:func:`_cache_problem`); otherwise it is recomputed, with a warning.
    """
    key = f"{content_hash(X, y)}-{CERTIFICATE_VERSION}"
    path = (cache_dir or default_cache_dir()) / "stats" / f"{key}.json"
    R = _checked_radius(X)
    if path.exists():
        cached = _read_cached(path, X, R)
        if cached is not None:
            return cached
    # The solvers only propose witnesses, which certify() evaluates on X itself: their data may round.
    Xs, _ = _unit_scale(X, window=_SOLVER_WINDOW, exact=False)
    y = np.asarray(y, dtype=np.float64)
    stats = None
    if sparse.issparse(Xs) and Xs.shape[0] <= Xs.shape[1]:  # sparse rows in many dimensions: most rows support vectors
        with single_thread():  # the solves' dot products reduce in one order: the same bits on any machine load
            candidate = max_margin._active_set(Xs, y)
        if candidate is not None:
            stats = _certify_candidates(X, y, [candidate])
            stats = stats if stats.gap <= TARGET_GAP else None  # else not that case: the working set decides
    if stats is None:
        with single_thread():  # small factorisations: BLAS threads only cost, and results stay bit-identical
            found = max_margin._max_margin(Xs, y)
        stats = None if found is None else _certify_candidates(X, y, found)
    if stats is None:
        stats = Stats(m=int(X.shape[0]), d=int(X.shape[1]), R=R, gamma_lo=math.nan,
                      gamma_hi=math.nan, separable=False, gap=math.nan)
    else:
        if X.shape[0] > max_margin._SEED_ROWS or stats.gap > TARGET_GAP:
            log.info("certified margin: m=%d d=%d gamma* in [%.6g, %.6g], relative gap %.2g", stats.m, stats.d,
                     stats.gamma_lo, stats.gamma_hi, stats.gap)
    if _cache_problem(stats.as_dict(), X, R) is not None:  # valid, but not an entry a later read would accept
        return stats
    try:  # a cache: one that cannot be written (read-only, full, a file in its place) costs the next recomputation
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_text(path, json.dumps(stats.as_dict()) + "\n")
    except OSError as e:
        log.warning("certified statistics not cached in %s (%s: %s)", path.parent, type(e).__name__, e.strerror or e)
    return stats


_FIELDS = {"m": int, "d": int, "R": float, "gamma_lo": float, "gamma_hi": float, "separable": bool, "gap": float}


def _cache_problem(entry: object, X: Matrix, R: float) -> str | None:
    """Why a cache entry cannot be the statistics of ``X`` (None when it is consistent with them).

    The entry must have exactly the fields of :class:`Stats` with their types, the sample's shape, the
    radius just certified on ``X`` (cheap, so recomputed and compared bit for bit) and a margin
    certificate that is either absent (NaN ends, not separable) or finite with
    gamma_lo <= gamma_hi <= R, gamma_hi >= 0, ``separable`` == (gamma_lo > 0) and the gap it implies.
    """
    if not isinstance(entry, dict) or set(entry) != set(_FIELDS):
        return f"fields {sorted(entry) if isinstance(entry, dict) else type(entry).__name__}, not {sorted(_FIELDS)}"
    for name, kind in _FIELDS.items():
        value = entry[name]
        ok = isinstance(value, bool) if kind is bool else (
            isinstance(value, int) and not isinstance(value, bool) if kind is int
            else isinstance(value, (int, float)) and not isinstance(value, bool))
        if not ok:
            return f"{name} = {value!r} is not a{'n' if kind is int else ''} {kind.__name__}"
    if (entry["m"], entry["d"]) != tuple(X.shape):
        return f"shape ({entry['m']}, {entry['d']}) is not the sample's {tuple(X.shape)}"
    if float(entry["R"]) != R:
        return f"R = {entry['R']!r} is not the sample's certified radius {R!r}"
    lo, hi, gap = float(entry["gamma_lo"]), float(entry["gamma_hi"]), float(entry["gap"])
    if math.isnan(lo) and math.isnan(hi):
        return None if not entry["separable"] and math.isnan(gap) else "a missing margin certificate with separable or a gap"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"margin certificate [{lo!r}, {hi!r}] is not finite"
    if not (lo <= hi and 0.0 <= hi <= R):
        return f"margin certificate violates gamma_lo <= gamma_hi <= R: [{lo!r}, {hi!r}], R = {R!r}"
    if entry["separable"] != (lo > 0):
        return f"separable = {entry['separable']} with gamma_lo = {lo!r}"
    expected = (hi - lo) / hi if hi > 0 else math.inf
    if not (gap == expected or (math.isnan(gap) and math.isnan(expected))):
        return f"gap = {gap!r} is not (gamma_hi - gamma_lo) / gamma_hi = {expected!r}"
    return None


def _read_cached(path: Path, X: Matrix, R: float) -> Stats | None:
    """The cached statistics at ``path`` if they are readable and consistent with ``X``; otherwise a
    warning and None (the caller recomputes them and overwrites the entry). Never trusted unchecked."""
    try:
        entry = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        problem = f"unreadable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    else:
        problem = _cache_problem(entry, X, R)
    if problem is None:
        try:
            return Stats(**entry)
        except CertificateError as e:  # unreachable after the checks above; kept so a bad entry is never used
            problem = str(e)
    warnings.warn(f"stats cache entry {path} ignored and recomputed: {problem}", RuntimeWarning, stacklevel=3)
    return None


def default_cache_dir() -> Path:
    """``BOUNDLAB_CACHE`` if set, else ``.cache`` in the project root (``pipeline.paths.cache_dir``)."""
    from pipeline.paths import cache_dir

    return cache_dir()
