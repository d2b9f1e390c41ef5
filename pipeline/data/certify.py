"""Certified statistics of the vectors a learner sees: radius, separability and the best margin.

Every bound in :mod:`pipeline.bounds` is evaluated from the statistics measured here, on exactly the
array handed to the learner (BOUNDS.md section 0). Statistics are rigorous in floating point: ``R`` is
an upper bound of max_i ||x_i|| and ``gamma_lo`` a lower bound of the margin attained by an explicit
witness direction, both with the rounding error of the dot products accounted for (Higham, *Accuracy
and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5: |fl(a.b) - a.b| <= gamma_d |a|.|b|).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from pipeline._lazy import LazyModule

sparse = LazyModule("scipy.sparse")

Matrix = "np.ndarray | sparse.csr_matrix"


from pipeline._rounding import U as _U  # noqa: E402
from pipeline._rounding import gamma as _gamma  # noqa: E402


@dataclass(frozen=True)
class Stats:
    """Certified statistics of a labelled sample (BOUNDS.md sections 1 and 9).

    Attributes
    ----------
    m, d : sample size and dimension of the vectors the learner sees.
    R : rigorous upper bound of max_i ||x_i||.
    gamma_lo, gamma_hi : two-sided certificate gamma_lo <= gamma*(S) <= gamma_hi of the best margin
        gamma*(S) = max_{||w||=1} min_i y_i w.x_i; NaN where no certificate exists.
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

    def as_dict(self) -> dict[str, float | int | bool]:
        return asdict(self)


def radius(X: Matrix) -> float:
    """Rigorous upper bound of max_i ||x_i|| for the float rows of ``X`` (dense or sparse)."""
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sparse.issparse(X) else np.einsum("ij,ij->i", X, X)
    return math.sqrt(sq.max(initial=0.0) * (1.0 + _gamma(X.shape[1]))) * (1.0 + 2.0 * _U)


def margins_lower(X: Matrix, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Rigorous lower bounds of each y_i w.x_i / ||w||: the rounding of every dot product and of
    ||w|| is charged against the margin, so each value is below the exact one."""
    g = _gamma(X.shape[1])
    margins = y * (X @ w) - g * (abs(X) @ np.abs(w))
    norm_hi = math.sqrt(float(w @ w) * (1.0 + g)) * (1.0 + 2.0 * _U)
    lo = np.asarray(margins, dtype=np.float64) / norm_hi
    return np.where(lo > 0, lo * (1.0 - 4.0 * _U), lo * (1.0 + 4.0 * _U))


def margin_lower(X: Matrix, y: np.ndarray, w: np.ndarray) -> float:
    """Rigorous lower bound of min_i y_i w.x_i / ||w||: a margin attained by the explicit ``w``.

    Any ``w`` gives gamma_lo <= gamma*(S) (BOUNDS.md section 1, step 3).
    """
    return float(margins_lower(X, y, w).min())


def margin_upper(X: Matrix, y: np.ndarray, alpha: np.ndarray) -> float:
    """Upper bound ||p|| of gamma*(S) with p = sum_i alpha_i y_i x_i / sum_i alpha_i, for alpha >= 0.

    For any unit w, min_i y_i w.x_i <= sum_i alpha_i y_i w.x_i / sum_i alpha_i = w.p <= ||p||
    (BOUNDS.md section 1, step 3). Rounded outwards like :func:`margin_lower`.
    """
    if np.any(alpha < 0) or not alpha.sum() > 0:
        raise ValueError("alpha must be non-negative with a positive sum")
    p = (X.T @ (alpha * y)) / alpha.sum()
    g = _gamma(X.shape[0] + X.shape[1])
    return math.sqrt(float(p @ p) * (1.0 + g)) * (1.0 + g)


def certify(X: Matrix, y: np.ndarray, w: np.ndarray, alpha: np.ndarray) -> Stats:
    """Certified statistics of (X, y) from a primal witness ``w`` and a dual witness ``alpha``."""
    lo = margin_lower(X, y, w)
    hi = margin_upper(X, y, alpha)
    return Stats(
        m=int(X.shape[0]),
        d=int(X.shape[1]),
        R=radius(X),
        gamma_lo=lo,
        gamma_hi=hi,
        separable=lo > 0,
        gap=(hi - lo) / hi if hi > 0 else math.inf,
    )


# --- Certification of an arbitrary sample (BOUNDS.md section 1, "Real data") -----------------------

CERTIFICATE_VERSION = "lp-highs+qp-clarabel-1"
TARGET_GAP = 1e-6


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
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _separating_direction(Z: Matrix) -> np.ndarray | None:
    """A w with Z w >= 1 (LP feasibility, HiGHS), or None when the LP is infeasible."""
    from scipy.optimize import linprog

    d = Z.shape[1]
    res = linprog(np.zeros(d), A_ub=-Z, b_ub=-np.ones(Z.shape[0]), bounds=[(None, None)] * d, method="highs")
    return res.x if res.status == 0 else None


def _hard_margin(Z: Matrix, fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """argmin 1/2 ||w||^2 s.t. Z w >= 1 by an interior-point solver, with the constraints' duals.

    Clarabel at tolerances 1e-12, then at its defaults, then SCS; if every solver fails (tiny
    degenerate samples), the LP's separating direction ``fallback`` and uniform duals, still valid
    witnesses, only looser ones (the certificate reports its gap).
    """
    import cvxpy as cp

    w = cp.Variable(Z.shape[1])
    margin = Z @ w >= 1
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w)), [margin])
    attempts = [(cp.CLARABEL, {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "max_iter": 500}),
                (cp.CLARABEL, {}), (cp.SCS, {"eps": 1e-9})]
    for solver, options in attempts:
        with warnings.catch_warnings():  # "may be inaccurate": the certificate measures it, and polishing fixes it
            warnings.simplefilter("ignore")
            try:
                problem.solve(solver=solver, **options)
            except cp.error.SolverError:
                continue
        if w.value is not None and margin.dual_value is not None and np.all(np.isfinite(w.value)):
            return np.asarray(w.value, dtype=np.float64), np.maximum(np.asarray(margin.dual_value, dtype=np.float64), 0.0)
    return fallback, np.ones(Z.shape[0])


def _polish(Z: Matrix, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Active-set polish of an interior-point solution (tiny margins leave it ~1e-4 inaccurate).

    On the support set S (duals not negligible) the optimum is the least-norm w with z_i.w = 1 for
    i in S, and w = sum_S beta_i z_i. Both are solved by least squares on Z_S itself (SVD: the
    condition number is the square root of the Gram matrix's). Returns candidate witnesses (w, alpha).
    """
    support = np.flatnonzero(alpha > 1e-6 * alpha.max())
    Zs = Z[support]
    Zs = Zs.toarray() if sparse.issparse(Zs) else Zs
    w = np.linalg.lstsq(Zs, np.ones(len(support)), rcond=None)[0]
    beta = np.zeros(Z.shape[0])
    beta[support] = np.maximum(np.linalg.lstsq(Zs.T, w, rcond=None)[0], 0.0)
    return w, beta


def certify_sample(X: Matrix, y: np.ndarray, cache_dir: Path | None = None) -> Stats:
    """Certified statistics of any labelled sample, computed once per content and cached.

    Separability is an LP (scipy's HiGHS). For a separable sample the homogeneous hard-margin QP
    min 1/2||w||^2 s.t. y_i w.x_i >= 1 is solved by Clarabel (interior point, tolerances 1e-12); its
    solution is the primal witness (gamma_lo) and its duals the dual witness (gamma_hi) of the
    two-sided certificate, both evaluated rigorously by :func:`certify`. A non-separable sample has
    no margin: gamma_lo = gamma_hi = NaN and ``separable`` False.
    """
    key = f"{content_hash(X, y)}-{CERTIFICATE_VERSION}"
    path = (cache_dir or default_cache_dir()) / "stats" / f"{key}.json"
    if path.exists():
        return Stats(**json.loads(path.read_text()))
    Z = sparse.diags(y) @ sparse.csr_matrix(X) if sparse.issparse(X) else y[:, None] * X
    direction = _separating_direction(Z)
    if direction is None:
        stats = Stats(m=int(X.shape[0]), d=int(X.shape[1]), R=radius(X), gamma_lo=math.nan,
                      gamma_hi=math.nan, separable=False, gap=math.nan)
    else:
        w, alpha = _hard_margin(Z, direction)
        stats = certify(X, y, w, alpha)
        w_polished, alpha_polished = _polish(Z, alpha)
        if alpha_polished.sum() > 0:  # any w and any alpha >= 0 certify: keep the tighter ends
            better = certify(X, y, w_polished, alpha_polished)
            lo, hi = max(stats.gamma_lo, better.gamma_lo), min(stats.gamma_hi, better.gamma_hi)
            stats = Stats(stats.m, stats.d, stats.R, lo, hi, lo > 0, (hi - lo) / hi)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stats.as_dict()) + "\n")
    os.replace(tmp, path)
    return stats


def default_cache_dir() -> Path:
    """``BOUNDLAB_CACHE`` if set, else ``.cache`` in the project root."""
    from pipeline.paths import project_root

    return Path(os.environ.get("BOUNDLAB_CACHE") or project_root() / ".cache")
