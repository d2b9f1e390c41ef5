"""The max-margin search: witnesses of the hard-margin problem min 1/2 ||w||^2 s.t. y_i w.x_i >= 1.

The solvers here only propose witnesses, a direction w and duals alpha >= 0, which
:mod:`pipeline.solvers.certified` evaluates rigorously (any w bounds the best margin from below, any
alpha >= 0 from above): a solver's inaccuracy can loosen a certificate but never falsify it. What they
decide is separability, and only from a proven answer: HiGHS's LP status "optimal" (a separating w) or
"infeasible" (none exists); any other outcome raises :class:`SolverError`. The whole-sample solvers
(HiGHS's LP, Clarabel's hard-margin QP and an active-set polish) are the fallback and the tests'
reference; a sample is searched by a working set of candidate support vectors (cutting planes: an exact
NNLS per round, one pass over the sample for the rows it violates), and sparse rows in many dimensions
first by a primal-dual active set. Used by :func:`pipeline.data.certify.certify_sample`.
"""

from __future__ import annotations

import logging
import math
import time
import warnings

import numpy as np
from pipeline.params import UserError, memory_shortfall
from pipeline.solvers.certified import Matrix, sparse


class SolverError(RuntimeError):
    """A solver that proved nothing (iteration limit, numerical trouble, out of memory, an exception): its
    answer is neither a certificate nor "not separable", and nothing is cached. Names the solver and status."""

    def __init__(self, solver: str, status: object, detail: str = "") -> None:
        self.solver, self.status = solver, status
        more = f" ({detail})" if detail else ""
        super().__init__(f"{solver} ended with status {status}{more}: it proved neither separability nor its absence, "
                         "so no statistics were certified or cached; retry, or reduce or rescale the data")


_LP_SOLVER = "scipy.optimize.linprog (HiGHS)"
_LP_OPTIMAL, _LP_INFEASIBLE = 0, 2  # linprog's statuses that prove something: a feasible w, or none exists


def _separating_direction(Z: Matrix) -> np.ndarray | None:
    """A w with Z w >= 1 (LP feasibility, HiGHS), or None when HiGHS proves the LP infeasible.

    Only those two statuses are facts about the data. HiGHS's dual simplex (its default) ends some
    non-separable noisy samples with model status "unknown" (e.g. 2000 x 300 with 10% flipped labels);
    its interior-point method then proves them infeasible, so it is tried before giving up. Any other
    outcome (iteration limit, numerical difficulties, an exception such as MemoryError) raises
    :class:`SolverError`.
    """
    from scipy.optimize import linprog

    d = Z.shape[1]
    res = None
    for method in ("highs", "highs-ipm"):
        try:
            res = linprog(np.zeros(d), A_ub=-Z, b_ub=-np.ones(Z.shape[0]), bounds=[(None, None)] * d, method=method)
        except Exception as e:  # MemoryError included: an exception proves nothing about the data
            raise SolverError(_LP_SOLVER, type(e).__name__, str(e).splitlines()[0] if str(e) else "") from e
        if res.status == _LP_OPTIMAL and res.x is not None and np.all(np.isfinite(res.x)):
            return np.asarray(res.x, dtype=np.float64)
        if res.status == _LP_INFEASIBLE:
            return None
    message = str(getattr(res, "message", ""))
    raise SolverError(_LP_SOLVER, res.status, message.splitlines()[0] if message else "")


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


def _exact_witnesses(Z: Matrix) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Witness candidates from the whole-sample solvers: HiGHS's LP for separability, Clarabel's hard-margin
    QP and its active-set polish (the path used for every sample before the working set). None when HiGHS
    proves the LP infeasible. Kept as the working set's fallback (a margin too small for the NNLS) and as
    the reference the tests compare the working set against."""
    direction = _separating_direction(Z)
    if direction is None:
        return None
    w, alpha = _hard_margin(Z, direction)
    out = [(w, alpha)]
    w_polished, alpha_polished = _polish(Z, alpha)
    if alpha_polished.sum() > 0:
        out.append((w_polished, alpha_polished))
    return out


# --- The working set: the hard-margin problem at the cost of a few passes over the data ------------------

log = logging.getLogger("boundlab")

_SEED_ROWS = 2048  # samples of up to this many rows start with the whole sample as the working set
_ADD_ROWS = 1024  # at most this many violators (or 2 (d + 1), up to 4 times this) join the working set per round
_ROUNDS = 500
_NEAR = 0.05  # working-set rows with a margin within this (relative) of the optimum stay for the next round
_VIOLATION = 1e-10  # a row violates when its margin under w (1 on the support) is below 1 - this
_DEGENERATE = 1e-6  # the NNLS's margin relative to its scale below this: HiGHS decides separability
_PROGRESS_SECONDS = 2.0
_GRAM_COPIES = 5  # a working set's Gram matrix G, its grown copy, H = G / c^2 + 1, H's factor and G[S, S]
_ACTIVE_ROUNDS, _STALL_ROUNDS = 40, 4  # the sparse active set's rounds before it leaves the sample to the working set
_CG_RTOL, _CG_ITERATIONS = 1e-14, 300  # its conjugate-gradient solves: relative residual, iterations a round
_DENSE_NNLS = 2048  # dense rows with up to this many features: the NNLS runs on the rows, not on their Gram matrix


class _Rows:
    """z_i = y_i x_i of a (unit-scaled) sample, never formed for the whole sample: one pass computes every
    margin z_i.w, and the working set's rows are gathered on demand."""

    def __init__(self, X: Matrix, y: np.ndarray) -> None:
        self.sparse = sparse.issparse(X)
        self.X = sparse.csr_matrix(X) if self.sparse else np.asarray(X, dtype=np.float64)
        self.y = y
        self.m, self.d = X.shape

    def margins(self, w: np.ndarray) -> np.ndarray:
        return self.y * np.asarray(self.X @ w, dtype=np.float64).ravel()

    def total(self) -> np.ndarray:
        """sum_i z_i."""
        return np.asarray(self.X.T @ self.y, dtype=np.float64).ravel()

    def take(self, idx: np.ndarray) -> Matrix:
        if self.sparse:
            return sparse.csr_matrix(sparse.diags(self.y[idx]) @ self.X[idx])
        return self.y[idx, None] * self.X[idx]


def _gram(A: Matrix, B: Matrix) -> np.ndarray:
    G = A @ B.T
    return G.toarray() if sparse.issparse(G) else np.asarray(G)


def _stack(A: Matrix, B: Matrix) -> Matrix:
    return sparse.vstack([A, B], format="csr") if sparse.issparse(A) else np.vstack([A, B])


def _solve_pd(H: np.ndarray, h: np.ndarray) -> np.ndarray:
    """H^-1 h for a positive definite H by Cholesky (LAPACK, no checks), else by least squares."""
    from scipy.linalg import lapack

    factor, info = lapack.dpotrf(H, lower=False, clean=False)
    if info == 0:
        x, info = lapack.dpotrs(factor, h, lower=False)
        if info == 0 and np.all(np.isfinite(x)):
            return x
    return np.linalg.lstsq(H, h, rcond=None)[0]


def _nnls_gram(H: np.ndarray, h: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """argmin_{u >= 0} u.H.u/2 - h.u for a positive semi-definite H: Lawson and Hanson's NNLS (*Solving
    Least Squares Problems*, 1974, ch. 23) on the normal equations (Bro and de Jong, "A fast
    non-negativity-constrained least squares algorithm", J. Chemometrics 11, 1997), started from the
    first passive set whose solution is positive: every index, else ``start`` (the previous round's
    support), else none."""
    n = h.shape[0]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    # first try every index (right at once when the support is everything), then the previous support
    for guess in (np.arange(n), start):
        if guess is None or not guess.size:
            continue
        s = _solve_pd(H[np.ix_(guess, guess)], h[guess])
        if np.all(s > 0):
            x[guess], passive[guess] = s, True
            break
    tol = 1e-14 * max(float(np.abs(h).max(initial=0.0)), float(np.abs(np.diag(H)).max(initial=0.0)), 1.0) * n
    idx = np.flatnonzero(passive)
    grad = h - H[:, idx] @ x[idx]
    for _ in range(3 * n + 100):
        candidate = np.where(passive, -np.inf, grad)
        j = int(np.argmax(candidate))
        if not candidate[j] > tol:
            break
        passive[j] = True
        first = True
        while True:
            idx = np.flatnonzero(passive)
            s = np.zeros(n)
            s[idx] = _solve_pd(H[np.ix_(idx, idx)], h[idx])
            if s[idx].min() > 0:
                break
            if first and s[j] <= 0:  # the entering index cannot rise: its gradient is rounding noise
                passive[j] = False
                return x
            first = False
            bad = idx[s[idx] <= 0]
            ratios = x[bad] / (x[bad] - s[bad])
            k = int(np.argmin(ratios))
            x = x + float(ratios[k]) * (s - x)
            x[bad[k]] = 0.0
            passive &= x > 0
            x[~passive] = 0.0
            if not passive.any():
                break
        x = np.where(passive, s, 0.0)
        idx = np.flatnonzero(passive)
        grad = h - H[:, idx] @ x[idx]
    return x


def _nnls(ZW: Matrix, G: np.ndarray | None, scale: float, dense_rows: bool, start: np.ndarray | None) -> np.ndarray:
    """u of :func:`_subproblem`'s NNLS by scipy's compiled Lawson-Hanson: on E itself for dense rows with
    few features; else on a square root A of H = G / c^2 + 1 1^T (A^T A = H, A^T b = 1: Cholesky, or the
    eigenvectors of a singular H), which has the same minimiser. :func:`_nnls_gram` if scipy's stops."""
    from scipy.optimize import nnls

    n = ZW.shape[0]
    try:
        if dense_rows:
            E = np.empty((ZW.shape[1] + 1, n), order="F")
            np.divide(ZW.T, scale, out=E[:-1])
            E[-1] = 1.0
            target = np.zeros(E.shape[0])
            target[-1] = 1.0
            return nnls(E, target, maxiter=50 * E.shape[0] + 10 * n)[0]
        import scipy.linalg
        from scipy.linalg import lapack

        H = G / (scale * scale) + 1.0
        U, info = lapack.dpotrf(H, lower=False, clean=True)
        if info == 0:
            u, info = lapack.dpotrs(U, np.ones(n), lower=False)
            if info == 0 and np.all(u > 0):  # every row is a support vector: the NNLS is this one solve
                return u
            A, b = U, scipy.linalg.solve_triangular(U, np.ones(n), trans="T", check_finite=False)
        else:
            lam, V = np.linalg.eigh(H)
            keep = lam > lam.max() * n * 1e-15
            root = np.sqrt(lam[keep])
            A, b = root[:, None] * V[:, keep].T, (V[:, keep].T @ np.ones(n)) / root
        return nnls(A, b, maxiter=50 * n + 100)[0]
    except (RuntimeError, np.linalg.LinAlgError, ValueError):
        G = _gram(ZW, ZW) if G is None else G
        return _nnls_gram(G / (scale * scale) + 1.0, np.ones(n), start)


def _subproblem(ZW: Matrix, G: np.ndarray | None, scale: float, start: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Hard-margin optimum of the working set: (w, alpha_W) with z_i.w = 1 on its support, or None when the
    NNLS finds the origin (numerically) in the hull of the z_i, i in W (then HiGHS decides).

    The least-distance problem min ||w|| s.t. Z_W w >= 1 is the NNLS min_{u >= 0} ||E u - e||,
    E = [Z_W^T / c; 1^T] (Lawson and Hanson 1974, ch. 23), with w proportional to Z_W^T u; here in the
    Gram form H = G / c^2 + 1 1^T, c the expected margin (which keeps sum u near 1/2). The support
    {u_i > 0} is then polished: least-norm w with z_i.w = 1 there, and the duals from w = Z_S^T beta.
    """
    n = ZW.shape[0]
    dense_rows = not sparse.issparse(ZW) and ZW.shape[1] <= _DENSE_NNLS
    if not dense_rows and G is None:
        G = _gram(ZW, ZW)
    for _ in range(3):  # c is a guess: re-solve with the margin found when it was far off (sum u far from 1/2)
        u = _nnls(ZW, G, scale, dense_rows, start)
        total = float(u.sum())
        if not (0.0 < total < 1.0):
            break
        relative = math.sqrt((1.0 - total) / total)  # the working set's margin / c
        if 0.1 <= relative <= 10.0 or relative < _DEGENERATE:
            break
        scale *= relative
    if not (0.0 < total < 1.0) or (1.0 - total) / total < _DEGENERATE**2:
        return None
    S = np.flatnonzero(u > 0)
    w, beta = None, None
    with np.errstate(all="ignore"):
        if dense_rows:
            ZS = ZW[S]
            w = np.linalg.lstsq(ZS, np.ones(S.size), rcond=None)[0]
            beta = np.linalg.lstsq(ZS.T, w, rcond=None)[0]
        else:
            beta = _solve_pd(G[np.ix_(S, S)], np.ones(S.size))  # Cholesky; least squares if singular
            w = np.asarray(ZW[S].T @ beta).ravel()
    alpha = np.zeros(n)
    if w is not None and np.all(np.isfinite(w)) and np.all(np.isfinite(beta)) and np.maximum(beta, 0.0).sum() > 0:
        alpha[S] = np.maximum(beta, 0.0)
        return w, alpha
    alpha[S] = u[S]
    return np.asarray(ZW.T @ u).ravel(), alpha


def _active_set(Xs: Matrix, y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Witnesses (w, alpha) of the hard-margin problem on sparse rows in many dimensions, or None.

    Sparse rows in as many dimensions as rows, or more, are nearly orthogonal, and most of them are
    support vectors: a working set would hold most of the sample, and its Gram matrix (memory the
    square of the support, time its cube) would not fit. Here the KKT conditions are solved directly by
    a primal-dual active set: guess the support S (first every row), solve z_i.w = 1 on S for
    w = Z_S^T alpha_S, i.e. (Z_S Z_S^T) alpha_S = 1, by conjugate gradients (two sparse products an
    iteration; the Gram matrix is never formed), then drop the rows of S with alpha <= 0 and add the rows
    outside S that w puts below the margin. When S no longer changes, alpha > 0 on S and every other row
    has margin >= 1, the optimum's conditions. Each solve starts from the last alpha, so the later rounds,
    which move a few rows, take a few iterations. It gives up (None) when the number of rows that move has
    not fallen to a new low in ``_STALL_ROUNDS`` rounds (no such optimum: a sample that is not separable
    cycles) or after ``_ACTIVE_ROUNDS``, and the caller uses the working set; the witnesses are evaluated
    rigorously by :func:`pipeline.data.certify.certify` either way, so this only decides how tight the
    certificate is, never whether it holds.
    """
    from scipy.sparse.linalg import LinearOperator, cg

    Z = sparse.csr_matrix(sparse.diags(y) @ Xs)
    m = Z.shape[0]
    diag = np.asarray(Z.multiply(Z).sum(axis=1)).ravel()
    if not np.all(diag > 0):
        return None
    began, products = time.monotonic(), [0]
    active, alpha = np.ones(m, dtype=bool), np.zeros(m)
    fewest, since = m + 1, 0
    for round_ in range(1, _ACTIVE_ROUNDS + 1):
        ZS = Z[active]
        ZST = ZS.T.tocsr()

        def gram(v: np.ndarray, ZS: Matrix = ZS, ZST: Matrix = ZST) -> np.ndarray:
            products[0] += 1
            return ZS @ (ZST @ v)

        size = ZS.shape[0]
        G = LinearOperator((size, size), matvec=gram, dtype=np.float64)
        M = LinearOperator((size, size), matvec=lambda v, d=diag[active]: v / d, dtype=np.float64)
        solved, info = cg(G, np.ones(size), x0=alpha[active], rtol=_CG_RTOL, atol=0.0, maxiter=_CG_ITERATIONS,
                          M=M)
        if not np.all(np.isfinite(solved)):
            return None
        alpha = np.zeros(m)
        alpha[active] = solved
        w = np.asarray(ZST @ solved).ravel()
        below = ~active & (np.asarray(Z @ w).ravel() < 1.0 - _VIOLATION)
        dropped = active & (alpha <= 0)
        if m > _SEED_ROWS:
            log.info("certifying the margin of %d x %d: active set, round %d, %d rows (%d leave, %d join), "
                     "%d sparse products, %.1f s", m, Z.shape[1], round_, size, int(dropped.sum()),
                     int(below.sum()), products[0], time.monotonic() - began)
        if info == 0 and not dropped.any() and not below.any():
            return w, alpha
        moved = int(dropped.sum() + below.sum())
        fewest, since = (moved, 0) if moved < fewest else (fewest, since + 1)
        if since >= _STALL_ROUNDS:
            return None
        active = (active & ~dropped) | below
        alpha[dropped] = 0.0
        if not active.any():
            return None
    return None


def _max_margin(Xs: Matrix, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Witnesses (w, alpha) of the hard-margin problem on the rows z_i = y_i x_i of ``Xs`` by a working set
    (cutting planes), or None when HiGHS proves a subset of the rows (hence the sample) not separable.

    Start: the whole sample when small, else the rows with the smallest margins under sum_i z_i. The
    working set's separability is HiGHS's LP (a proven status, else :class:`SolverError`). Each round
    solves the working set exactly (:func:`_subproblem`), then one pass over all rows finds those whose
    margin under its w is below the working set's (1): up to max(2 (d + 1), _ADD_ROWS) of the smallest
    join. The working set's optimal margin decreases strictly, so the rounds end; they stop when no row
    violates. A working set too close to the origin for the NNLS goes to HiGHS (infeasible: not
    separable) and then to the whole-sample solvers restricted to it (Clarabel).
    """
    rows = _Rows(Xs, y)
    m, d = rows.m, rows.d
    W = _first_working_set(rows)
    ZW = rows.take(W)
    direction = _separating_direction(ZW)
    if direction is None:
        return None
    scale = _first_scale(ZW, direction)
    gram = rows.sparse or d > _DENSE_NNLS  # the working set's Gram matrix, kept up to date, for many features
    G = _gram(ZW, ZW) if gram else None
    start: np.ndarray | None = None
    began = last = time.monotonic()
    best: tuple[np.ndarray, np.ndarray] | None = None
    for round_ in range(1, _ROUNDS + 1):
        solved = _working_set_optimum(ZW, G, scale, start)
        if solved is None:
            return None
        w, alpha_W = solved
        norm = float(np.linalg.norm(w))
        margins = rows.margins(w)
        low = float(margins.min())
        full = np.zeros(m)
        full[W] = alpha_W
        best = (w, full)
        scale = 1.0 / norm if norm > 0 else scale
        outside = np.ones(m, dtype=bool)
        outside[W] = False
        violating = np.flatnonzero(outside & (margins < 1.0 - _VIOLATION))
        now = time.monotonic()
        if m > _SEED_ROWS and (now - last >= _PROGRESS_SECONDS or not violating.size):
            last = now
            log.info("certifying the margin of %d x %d: round %d, working set %d rows (support %d), margin in "
                     "[%.6g, %.6g] (unit scale), %d rows violate, %.1f s", m, d, round_, W.size,
                     int(np.count_nonzero(alpha_W)), low / norm, 1.0 / norm, violating.size, now - began)
        if not violating.size:
            break
        W, ZW, G, start = _next_working_set(rows, W, ZW, G, alpha_W, margins, violating, round_)
    else:
        log.warning("certifying the margin of %d x %d: %d rounds without settling the working set; the certificate "
                    "reports its gap", m, d, _ROUNDS)
    return [best]


def _first_working_set(rows: _Rows) -> np.ndarray:
    """The first working set: the whole sample when small, else the rows with the smallest margins under
    sum_i z_i (the first rows when that sum is 0)."""
    m, d = rows.m, rows.d
    if m <= _SEED_ROWS:
        return np.arange(m)
    w0 = rows.total()
    seed = min(m - 1, max(512, min(4 * (d + 1), 4 * _ADD_ROWS)))
    return np.sort(np.argpartition(rows.margins(w0), seed)[:seed]) if np.any(w0 != 0) else np.arange(seed)


def _first_scale(ZW: Matrix, direction: np.ndarray) -> float:
    """The NNLS's first guess of the working set's margin c: that of HiGHS's separating ``direction``, else 1."""
    z = np.asarray(ZW @ direction).ravel()
    scale = float(z.min()) / float(np.linalg.norm(direction))
    if not (math.isfinite(scale) and scale > 0):
        scale = 1.0
    return scale


def _working_set_optimum(ZW: Matrix, G: np.ndarray | None, scale: float,
                         start: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The working set's witnesses (w, alpha_W): :func:`_subproblem`'s, else the whole-sample solvers' on it;
    None when HiGHS proves it (hence the sample) not separable."""
    solved = _subproblem(ZW, G, scale, start)
    if solved is None:  # the origin is (numerically) in the working set's hull: HiGHS decides
        exact = _exact_witnesses(ZW)
        if exact is None:
            return None
        solved = exact[-1]
    return solved


def _next_working_set(rows: _Rows, W: np.ndarray, ZW: Matrix, G: np.ndarray | None, alpha_W: np.ndarray,
                      margins: np.ndarray, violating: np.ndarray,
                      round_: int) -> tuple[np.ndarray, Matrix, np.ndarray | None, np.ndarray]:
    """The next round's working set (its rows' indices and the rows), its Gram matrix when ``G`` is kept (else
    None) and the NNLS's start (the support's positions in it): the support and the rows near the margin of
    this one, and up to max(2 (d + 1), _ADD_ROWS) of the ``violating`` rows, those with the smallest margins."""
    d = rows.d
    add = max(_ADD_ROWS, min(2 * (d + 1), 4 * _ADD_ROWS))
    if violating.size > add:
        violating = violating[np.argpartition(margins[violating], add)[:add]]
    violating = np.sort(violating)
    # the support (its optimum stays, so the working set's margin still falls) and the rows near the margin
    keep = np.flatnonzero((alpha_W > 0) | (margins[W] < 1.0 + _NEAR))
    if G is not None:  # its Gram matrix and the factorisations' copies of it: refused before they exhaust the memory
        _refuse_too_large(rows, round_, W, alpha_W, keep.size + violating.size, violating.size)
    Zk, Znew = ZW[keep], rows.take(violating)
    if G is not None:
        cross = _gram(Znew, Zk)
        G = np.block([[G[np.ix_(keep, keep)], cross.T], [cross, _gram(Znew, Znew)]])
    start = np.flatnonzero(alpha_W[keep] > 0)
    return np.concatenate([W[keep], violating]), _stack(Zk, Znew), G, start


def _refuse_too_large(rows: _Rows, round_: int, W: np.ndarray, alpha_W: np.ndarray, size: int, joining: int) -> None:
    """A UserError when a working set of ``size`` rows would not fit in the memory with the copies of its Gram
    matrix; after ``round_`` rounds, ``W`` and its duals ``alpha_W``, with ``joining`` violating rows to add."""
    shortfall = memory_shortfall(_GRAM_COPIES * 8.0 * size * size, f"a working set of {size} rows")
    if shortfall is not None:
        raise UserError(
            f"certifying the margin of {rows.m} x {rows.d}: {shortfall}. After {round_} rounds the working set holds "
            f"{W.size} rows, {int(np.count_nonzero(alpha_W))} of them support vectors, and {joining} more "
            "rows violate its margin: this sample's support set is most of it, which the working-set "
            "certificate cannot hold; certify a subsample (fewer rows)")
