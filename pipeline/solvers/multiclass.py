"""Certified solvers and interval estimates for the multiclass learners (docs/bounds.md sections 7-9).

- the losses (:func:`pipeline.risk.ghinge_losses`, :func:`pipeline.risk.zero_one_losses`) and the held-out
  intervals (:func:`pipeline.risk.clopper_pearson`, :func:`pipeline.risk.mean_ci`) live in :mod:`pipeline.risk`,
  below the learners, which measure their own predictors with them.
- :func:`ball_comparator`: min_{||U||_F <= B} L_S^{g-hinge}(U), the comparator of UML Cor. 17.2
  (docs/bounds.md section 7), as an SOCP (cvxpy + Clarabel), with an achieved upper end and a rigorous lower
  end from the Lagrangian dual of the ball constraint.
- :func:`multiclass_svm`: the multiclass SVM of UML Cor. 17.1 (lam ||W||_F^2, no 1/2), which is the
  Crammer-Singer machine without biases (Crammer & Singer, "On the algorithmic implementation of
  multiclass kernel-based vector machines", JMLR 2, 2001; docs/bounds.md section 8), by exact block dual
  coordinate ascent, certified by a duality gap evaluated from the returned vectors.

Duality used throughout. For every example i let alpha_{i,j} >= 0 (j != y_i) with
sum_{j != y_i} alpha_{i,j} <= 1. Since the loss max_{y'}[Delta(y', y_i) + (U_{y'} - U_{y_i}).x_i] is
>= 0 (the term y' = y_i) and >= each other term,

    ghinge(U; x_i, y_i) >= sum_{j != y_i} alpha_{i,j} (Delta(j, y_i) + (U_j - U_{y_i}).x_i),

so with a(alpha) = (1/n) sum_{i, j} alpha_{i,j} Delta(j, y_i) (the label cost ``cost``: the 0-1 cost,
Delta = 1 off the diagonal, by default) and G(alpha) = (1/n) sum_{i, j != y_i} alpha_{i,j}
(e_j - e_{y_i}) x_i^T (a k x d matrix), L_S(U) >= a(alpha) + <U, G(alpha)> for every U. Minimising the
right-hand side gives the weak-duality bounds used here:

- over the ball ||U||_F <= B: min_ball L_S >= a(alpha) - B ||G(alpha)||_F (the Lagrangian dual of the
  ball problem; it is the bound D_{lam'}(alpha) - lam' B^2 of docs/bounds.md section 7 at its best lam',
  since max_{lam'} -||G||^2/(4 lam') - lam' B^2 = -B ||G||);
- with the regulariser lam ||W||_F^2: min F >= a(alpha) - ||G(alpha)||_F^2 / (4 lam), attained at
  W = -G(alpha) / (2 lam) (the Crammer-Singer dual).

Floating point. Lower ends are rounded down and upper ends up by a-priori bounds of their rounding
errors (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5: a sum of n terms in
any order errs by at most gamma_n times the sum of their moduli; gamma doubled to cover the evaluation
of the bound itself), in the manner of :mod:`pipeline.solvers.dual`: the certificates hold for the float data
as given, whatever the solver did.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from pipeline._jit import kernel
from pipeline.params import POSITIVE, ParamError, UserError

from pipeline.numerics import UNIT_ROUNDOFF, err_factor, frobenius_upper, mean_upper
from pipeline.risk import Cost, _cost_or_none, _inputs, _margins, _scores


# --- Rigorous evaluation of both ends ---------------------------------------------------------------


def _losses_hi(X: np.ndarray, y: np.ndarray, W: np.ndarray, cost: np.ndarray | None = None) -> np.ndarray:
    """Rigorous upper bounds of each exact loss ghinge(W; x_i, y_i) of the float data.

    The largest float term max_j T_ij errs by at most gamma_{d+4} (|W_j|.|x_i| + |W_{y_i}|.|x_i| +
    max_j Delta(j, y_i) + |T_ij|) (the scores, their difference, the + Delta); the exact loss is <= max(0,
    that term + its error), which is exactly 0 when every term is below -error (then the loss is certified
    to be 0). ``cost`` None is the 0-1 cost.
    """
    X, y, W, k = _inputs(X, y, W)
    T = _margins(_scores(X, W), y, cost)
    top_cost = (1.0 - np.eye(k) if cost is None else cost).max(axis=0)[y]  # 1.0 for every example under 0-1
    A = np.abs(X) @ np.abs(W).T
    rows = np.arange(X.shape[0])
    T[rows, y] = -np.inf  # the own-class term is exactly 0, without rounding
    top = T.max(axis=1)
    T[rows, y] = 0.0
    err = err_factor(X.shape[1] + 6) * (A.max(axis=1) + A[rows, y] + top_cost + np.abs(T).max(axis=1))
    t = top + err
    return np.maximum(t + 4.0 * UNIT_ROUNDOFF * np.abs(t), 0.0)


def _coefficients(alpha: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C[i, j] = alpha_{i,j} (j != y_i), C[i, y_i] = -sum_j alpha_{i,j}: G(alpha) = C^T X / n."""
    C = alpha.copy()
    rows = np.arange(alpha.shape[0])
    C[rows, y] = 0.0
    C[rows, y] = -C.sum(axis=1)
    return C


def _feasible(alpha: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Clip to alpha >= 0, zero the own-class entries and scale rows so that the exact row sums of the
    returned floats are <= 1 (a float sum may be 1 + k u: shrink by (1 + 4 k u) whenever it is near 1)."""
    alpha = np.maximum(np.nan_to_num(np.asarray(alpha, dtype=np.float64), nan=0.0, posinf=0.0), 0.0)
    alpha[np.arange(alpha.shape[0]), y] = 0.0
    sums = alpha.sum(axis=1)
    k = alpha.shape[1]
    limit = 1.0 - 4.0 * k * UNIT_ROUNDOFF
    scale = 1.0 / np.maximum(sums * (1.0 + 8.0 * k * UNIT_ROUNDOFF), 1.0)
    scale[sums <= limit] = 1.0
    return alpha * scale[:, None]


def _dual_terms(X: np.ndarray, y: np.ndarray, alpha: np.ndarray,
                cost: np.ndarray | None = None) -> tuple[float, np.ndarray, float]:
    """a(alpha) rounded down, the float G(alpha), and an upper bound of ||fl(G) - G||_F.

    With a cost matrix, a(alpha) = (1/n) sum alpha_{i,j} Delta(j, y_i): each product rounds by a relative u
    at most, the correctly rounded sum and the division by n by one u each, so (1 - 8u) more than covers
    the three (alpha_{i,j} Delta >= 0: every error is relative)."""
    n = X.shape[0]
    if cost is None:
        a_lo = math.fsum(alpha.ravel()) / n * (1.0 - 4.0 * UNIT_ROUNDOFF)
    else:
        a_lo = math.fsum((alpha * cost[:, y].T).ravel()) / n * (1.0 - 8.0 * UNIT_ROUNDOFF)
    C = _coefficients(alpha, y)
    G = (C.T @ X) / n
    E = err_factor(n + alpha.shape[1] + 4) * ((np.abs(C).T @ np.abs(X)) / n)
    e_hi = math.sqrt(float(np.sum(E * E)) * (1.0 + err_factor(E.size))) * (1.0 + 4.0 * UNIT_ROUNDOFF)
    return a_lo, G, e_hi


# --- The ball comparator (docs/bounds.md section 7) -----------------------------------------------------


@dataclass(frozen=True)
class BallComparator:
    """Two-sided certificate of min_{||U||_F <= B} L_S^{g-hinge}(U) (docs/bounds.md section 7).

    Attributes
    ----------
    lower : rigorous lower bound a(alpha) - B ||G(alpha)||_F from the SOCP's duals (module docstring).
    upper : (1/n) sum_i ghinge(U; x_i, y_i), rounded up: a value achieved by ``U``.
    U : (k, d) the solver's U rescaled into the ball (||U||_F <= B in exact arithmetic).
    """

    lower: float
    upper: float
    U: np.ndarray


def _into_ball(U: np.ndarray, B: float) -> np.ndarray:
    """U scaled so that ||U||_F <= B holds exactly for the returned floats."""
    norm = frobenius_upper(U)
    if norm <= B:
        return U
    return U * (B / norm * (1.0 - 8.0 * UNIT_ROUNDOFF))


def _solve(problem: object, attempts: list[tuple[str, dict]]) -> bool:
    import cvxpy as cp

    for solver, options in attempts:
        with warnings.catch_warnings():  # "inaccurate": the certificate measures it
            warnings.simplefilter("ignore")
            try:
                problem.solve(solver=solver, **options)
            except cp.error.SolverError:
                continue
        if problem.status in ("optimal", "optimal_inaccurate"):
            return True
    return False


_CLARABEL_TIGHT = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11, "max_iter": 400}


def _attempts() -> list[tuple[str, dict]]:
    import cvxpy as cp

    return [(cp.CLARABEL, _CLARABEL_TIGHT), (cp.CLARABEL, {}), (cp.SCS, {"eps": 1e-9})]


def _loss_constraints(X: np.ndarray, y: np.ndarray, k: int, U: object, xi: object,
                      cost: np.ndarray | None = None) -> list:
    """xi_i >= Delta(j, y_i) + (U_j - U_{y_i}).x_i for every j (0 for j = y_i), one block of n per class j."""
    import cvxpy as cp

    n = X.shape[0]
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
    S = X @ U.T
    own = cp.sum(cp.multiply(S, onehot), axis=1)
    return [xi >= S[:, j] - own + ((1.0 - onehot[:, j]) if cost is None else cost[j, y]) for j in range(k)]


def ball_comparator(X: np.ndarray, y: np.ndarray, k: int, B: float,
                    cost: str | np.ndarray | None = None) -> BallComparator:
    """Certified min over ||U||_F <= B of the empirical generalized hinge loss (docs/bounds.md section 7).

    Solves the SOCP min_{U, xi} (1/n) sum_i xi_i s.t. xi_i >= Delta(j, y_i) + (U_j - U_{y_i}).x_i for all
    j, ||U||_F <= B with cvxpy + Clarabel (tolerances 1e-11; then Clarabel's defaults, then SCS). The
    comparator of UML Cor. 17.2 on a sample, and the lower/upper population estimates of docs/bounds.md
    section 7 on two samples.

    Certificate. ``upper`` is the loss achieved by the solver's U scaled into the ball, or scaled onto
    its boundary when that is lower (for realisable data with B above 1/margin this makes the margins
    strictly > 1, and ``upper`` exactly 0). ``lower`` is a(alpha) - B ||G(alpha)||_F (module
    docstring) at alpha = n times the duals of the loss constraints, made exactly feasible; it is a
    valid lower bound for any alpha, so the certificate does not trust the solver. If every solver
    fails, U = 0 (upper = the mean of max_y' Delta(y', y_i), 1 for the 0-1 cost) and alpha = 0 (lower = 0).

    Parameters
    ----------
    X : (n, d) sample.
    y : (n,) labels in 0..k-1.
    k : number of classes.
    B : radius of the ball (>= 0).
    cost : the label cost Delta (:func:`pipeline.risk.cost_matrix`: a name or a k x k matrix); None is 0-1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 3)); y = rng.integers(0, 3, 60)
    >>> c = ball_comparator(X, y, 3, 2.0)
    >>> bool(c.lower <= c.upper <= c.lower + 1e-6), bool(np.linalg.norm(c.U) <= 2.0)
    (True, True)
    """
    import cvxpy as cp

    X, y, _, k = _inputs(X, y, k=k)
    if not (B >= 0 and math.isfinite(B)):
        raise ParamError("B", B, "a finite number >= 0")
    cost = _cost_or_none(cost, k)
    n, d = X.shape
    if n == 0:
        raise UserError("ball_comparator needs at least one example")
    U, xi = cp.Variable((k, d)), cp.Variable(n)
    constraints = _loss_constraints(X, y, k, U, xi, cost)
    problem = cp.Problem(cp.Minimize(cp.sum(xi) / n), [*constraints, cp.norm(U, "fro") <= B])
    candidates = [np.zeros((k, d))]
    alpha = np.zeros((n, k))
    if _solve(problem, _attempts()) and U.value is not None:
        U_hat = np.asarray(U.value, dtype=np.float64)
        candidates.append(_into_ball(U_hat, B))
        norm = float(np.linalg.norm(U_hat))
        if norm > 0:
            candidates.append(_into_ball(U_hat * (B / norm), B))
        if all(c.dual_value is not None for c in constraints):
            alpha = n * np.stack([np.asarray(c.dual_value, dtype=np.float64) for c in constraints], axis=1)
    best_U, best_hi = None, math.inf
    for V in candidates:
        hi = mean_upper(_losses_hi(X, y, V, cost))
        if hi < best_hi:
            best_U, best_hi = V, hi
    alpha = _feasible(alpha, y)
    a_lo, G, e_hi = _dual_terms(X, y, alpha, cost)
    g_hi = (frobenius_upper(G) + e_hi) * (1.0 + 2.0 * UNIT_ROUNDOFF)
    lower = a_lo - B * g_hi * (1.0 + 2.0 * UNIT_ROUNDOFF)
    lower -= 4.0 * UNIT_ROUNDOFF * (abs(a_lo) + B * g_hi)
    return BallComparator(lower=float(lower), upper=float(best_hi), U=best_U)


# --- The multiclass SVM (UML Cor. 17.1; Crammer & Singer 2001) --------------------------------------


@dataclass(frozen=True)
class SVMCertificate:
    """A certified multiclass SVM solution: dual <= F* <= F(W) <= primal.

    Attributes
    ----------
    W : (k, d) weights W(alpha) = -G(alpha) / (2 lam) of the returned dual point (or the better primal
        point of the fallback solver).
    primal : F(W) = lam ||W||_F^2 + (1/m) sum_i ghinge(W; x_i, y_i), rounded up: an upper bound of F*.
    dual : a(alpha) - ||G(alpha)||_F^2 / (4 lam), rounded down: a lower bound of F*.
    gap : primal - dual >= 0, a certified bound of F(W) - F*.
    """

    W: np.ndarray
    primal: float
    dual: float
    gap: float


@kernel
def _cs_epochs(X, y, sqn, lm2, beta, W, perms, cost, plain):  # noqa: ANN001, ANN202
    """Crammer-Singer block coordinate ascent epochs in the orders ``perms[e]``.

    beta_i = e_{y_i} - alpha_i (alpha_i on the simplex: beta_i <= e_{y_i}, sum_j beta_{i,j} = 0) and
    W = sum_i beta_i x_i^T / lm2, lm2 = 2 lam m, are updated in place. The block step maximises the dual
    exactly over beta_i: with A = ||x_i||^2 / lm2 and scores s = W x_i, the new beta_i is the projection
    of v = beta_i - (s - e_{y_i}) / A onto {beta <= e_{y_i}, sum beta = 0}: beta = min(e_{y_i}, v - theta),
    theta solving sum_j max(0, theta - z_j) = 1, z = v - e_{y_i} (Crammer & Singer 2001, section 6).

    With a label cost the dual's linear term is -sum_j beta_{i,j} Delta(j, y_i), and v = beta_i - (s +
    Delta(., y_i)) / A, Delta(., y_i) = ``cost[:, y_i]``. For the 0-1 cost (``plain``) s + Delta(., y_i) is
    s - e_{y_i} + 1, and a shift by a constant vector does not change the projection onto sum beta = 0: the
    0-1 path keeps the form s - e_{y_i}, and its bits.
    """
    m, d = X.shape
    k = W.shape[0]
    s = np.empty(k)
    v = np.empty(k)
    z = np.empty(k)
    zs = np.empty(k)
    for e in range(perms.shape[0]):
        for t in range(m):
            i = perms[e, t]
            if sqn[i] == 0.0:
                continue
            A = sqn[i] / lm2
            yi = y[i]
            for j in range(k):
                acc = 0.0
                for f in range(d):
                    acc += W[j, f] * X[i, f]
                s[j] = acc
            for j in range(k):
                u = 1.0 if j == yi else 0.0
                if plain:
                    v[j] = beta[i, j] - (s[j] - u) / A
                else:
                    v[j] = beta[i, j] - (s[j] + cost[j, yi]) / A
                z[j] = v[j] - u
            for j in range(k):  # insertion sort into zs: k is small, and no allocation per step
                zj = z[j]
                r = j
                while r > 0 and zs[r - 1] > zj:
                    zs[r] = zs[r - 1]
                    r -= 1
                zs[r] = zj
            cum = 0.0
            theta = 0.0
            for r in range(k):
                cum += zs[r]
                theta = (1.0 + cum) / (r + 1)
                if r == k - 1 or theta <= zs[r + 1]:
                    break
            for j in range(k):
                u = 1.0 if j == yi else 0.0
                new = min(u, v[j] - theta)
                delta = new - beta[i, j]
                if delta != 0.0:
                    beta[i, j] = new
                    c = delta / lm2
                    for f in range(d):
                        W[j, f] += c * X[i, f]


@kernel
def _weights_of(X, C, scale):  # noqa: ANN001, ANN202
    """W = scale * C^T X, summed over the examples in order (fixed order: bit-reproducible)."""
    m, d = X.shape
    k = C.shape[1]
    W = np.zeros((k, d))
    for i in range(m):
        for j in range(k):
            c = C[i, j]
            if c != 0.0:
                for f in range(d):
                    W[j, f] += c * X[i, f]
    for j in range(k):
        for f in range(d):
            W[j, f] *= scale
    return W


def _svm_primal_hi(X: np.ndarray, y: np.ndarray, lam: float, W: np.ndarray, cost: np.ndarray | None = None) -> float:
    reg_hi = lam * float(np.sum(W * W)) * (1.0 + err_factor(W.size + 2))
    return (mean_upper(_losses_hi(X, y, W, cost)) + reg_hi) * (1.0 + 2.0 * UNIT_ROUNDOFF)


def _svm_evaluate(X: np.ndarray, y: np.ndarray, lam: float, alpha: np.ndarray,
                  cost: np.ndarray | None = None) -> tuple[np.ndarray, float, float]:
    """From off-class duals alpha: W(alpha) = -G(alpha)/(2 lam), F(W) rounded up, D(alpha) rounded down."""
    m = X.shape[0]
    alpha = _feasible(alpha, y)
    a_lo, _, e_hi = _dual_terms(X, y, alpha, cost)
    C = _coefficients(alpha, y)
    W = _weights_of(X, -C, 1.0 / (2.0 * lam * m))  # -G/(2 lam), G = C^T X / m
    # ||G|| <= ||fl(W)|| 2 lam + (rounding of W) + e_hi: bound ||fl(W) - W(alpha)|| like fl(G)'s.
    W_err = err_factor(m + alpha.shape[1] + 6) * (np.abs(C).T @ np.abs(X)) / (2.0 * lam * m)
    g_hi = (2.0 * lam * (frobenius_upper(W) + frobenius_upper(W_err))) * (1.0 + 4.0 * UNIT_ROUNDOFF)
    dual = a_lo - g_hi * g_hi / (4.0 * lam) * (1.0 + 8.0 * UNIT_ROUNDOFF)
    dual -= 4.0 * UNIT_ROUNDOFF * abs(dual)
    return W, _svm_primal_hi(X, y, lam, W, cost), dual


def _svm_cvxpy(X: np.ndarray, y: np.ndarray, k: int, lam: float,
               cost: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The primal QP by Clarabel: its W and n times the loss constraints' duals (or None)."""
    import cvxpy as cp

    m, d = X.shape
    W, xi = cp.Variable((k, d)), cp.Variable(m)
    constraints = _loss_constraints(X, y, k, W, xi, cost)
    problem = cp.Problem(cp.Minimize(lam * cp.sum_squares(W) + cp.sum(xi) / m), constraints)
    if not _solve(problem, _attempts()) or W.value is None:
        return None, None
    alpha = None
    if all(c.dual_value is not None for c in constraints):
        alpha = m * np.stack([np.asarray(c.dual_value, dtype=np.float64) for c in constraints], axis=1)
    return np.asarray(W.value, dtype=np.float64), alpha


def multiclass_svm(X: np.ndarray, y: np.ndarray, k: int, lam: float, *, tol: float = 1e-8,
                   max_epochs: int = 2_000, cost: Cost = None) -> SVMCertificate:
    """Certified multiclass SVM: min_W F(W) = lam ||W||_F^2 + (1/m) sum_i ghinge(W; x_i, y_i), the
    generalized hinge loss with the label cost ``cost`` (the 0-1 cost by default).

    The UML Cor. 17.1 convention (no 1/2; docs/bounds.md sections 0 and 7), which is the bias-free
    Crammer-Singer machine 1/2 sum_j ||W_j||^2 + C sum_i xi_i with C = 1/(2 lam m) (docs/bounds.md section 8).

    Solved by block dual coordinate ascent on the Crammer-Singer dual (Crammer & Singer, JMLR 2, 2001,
    section 6; Keerthi et al., "A sequential dual method for large scale multi-class linear SVMs",
    KDD 2008): each block step maximises the dual exactly over one example's simplex of duals
    (:func:`_cs_epochs`), in seeded random-permutation epochs. Every few epochs W(alpha) is recomputed
    from alpha in a fixed order and both ends of the certificate are evaluated afresh (module
    docstring); the loop stops once the certified gap is <= ``tol``. If ``max_epochs`` pass first, the
    primal QP is solved by cvxpy + Clarabel and the better primal point and the better dual point of
    the two solvers are kept. Nothing is raised on a gap > tol: the caller decides.

    Parameters
    ----------
    X : (m, d) sample.
    y : (m,) labels in 0..k-1.
    k : number of classes (>= 2).
    lam : regularisation lam > 0 (lam ||W||_F^2; UML Cor. 17.1 takes lam = sqrt(2 rho^2 / (B^2 m))).
    tol : target of the certified gap primal - dual (absolute).
    max_epochs : epochs of coordinate ascent before the fallback solver.
    cost : the label cost Delta (:func:`pipeline.risk.cost_matrix`: a name or a k x k matrix); None is 0-1.
        The dual's linear term becomes (1/m) sum_{i,j} alpha_{i,j} Delta(j, y_i) (module docstring).

    Returns
    -------
    SVMCertificate with primal >= F(W) >= F* >= dual.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 4)); y = np.argmax(X[:, :3], axis=1)
    >>> cert = multiclass_svm(X, y, 3, 1e-2)
    >>> bool(cert.gap <= 1e-8), cert.W.shape
    (True, (3, 4))
    """
    X, y, _, k = _inputs(X, y, k=k)
    POSITIVE.check("lam", float(lam))  # the learners' one rule for lam (pipeline.params.LAM)
    if not tol >= 0:
        raise ParamError("tol", tol, "a number >= 0")
    cost = _cost_or_none(cost, k)
    cost_arg = np.ascontiguousarray(1.0 - np.eye(k) if cost is None else cost)
    m, d = X.shape
    if m == 0:
        raise UserError("multiclass_svm needs at least one example")
    rng = np.random.default_rng(0)
    sqn = np.einsum("ij,ij->i", X, X)
    beta = np.zeros((m, k))
    alpha = np.zeros((m, k))
    epochs = 0
    while True:
        W, primal, dual = _svm_evaluate(X, y, lam, alpha, cost)
        if primal - dual <= tol or epochs >= max_epochs:
            break
        step = max(1, min(epochs // 10, 50, max_epochs - epochs))
        beta = -_feasible(alpha, y)  # off-class entries -alpha; own class: the row sum
        beta[np.arange(m), y] = -beta.sum(axis=1)
        W_state = np.ascontiguousarray(W)
        perms = rng.permuted(np.tile(np.arange(m, dtype=np.int64), (step, 1)), axis=1)
        _cs_epochs(X, y, sqn, 2.0 * lam * m, beta, W_state, perms, cost_arg, cost is None)
        alpha = np.maximum(-beta, 0.0)
        epochs += step
    if primal - dual > tol:
        W_cvx, alpha_cvx = _svm_cvxpy(X, y, k, lam, cost)
        if alpha_cvx is not None:
            W2, primal2, dual2 = _svm_evaluate(X, y, lam, alpha_cvx, cost)
            if primal2 < primal:
                W, primal = W2, primal2
            dual = max(dual, dual2)
        if W_cvx is not None:
            primal3 = _svm_primal_hi(X, y, lam, W_cvx, cost)
            if primal3 < primal:
                W, primal = W_cvx, primal3
    return SVMCertificate(W=W, primal=primal, dual=dual, gap=max(primal - dual, 0.0))
