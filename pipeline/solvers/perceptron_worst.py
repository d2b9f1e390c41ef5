"""The exact worst case of Novikoff's setting as a small semidefinite program (docs/bounds.md section 1).

Performance estimation (Drori & Teboulle, "Performance of first-order methods for smooth convex
minimization: a novel approach", Math. Program. 145, 2014; Taylor, Hendrickx & Glineur, "Smooth strongly
convex interpolation and exact worst-case performance of first-order methods", Math. Program. 161, 2017):
the adversary's choice of a whole sequence is written as the choice of a Gram matrix, and every condition
of the theorem becomes a linear constraint on it, so the worst case over *all* admissible sequences is an
SDP. To stand beside the bound `novikoff` and the measured count ("bound / exact worst case / measured").

- :func:`max_margin`: the SDP "largest margin that still allows M mistakes", with its dual objective, the
  gap, a repaired dual upper bound, status, time and G; its optimum is R/sqrt(M) (proved below).
- :func:`feasible` / :func:`worst_case_mistakes`: whether M mistakes are possible at (R, gamma), and the
  largest such M, from the SDP (floor((R/gamma)^2); one less at integer (R/gamma)^2 under ``strict``).
- :func:`instance` / :func:`tie_instance`: an extracted worst sequence, certified exactly
  (:func:`certify_instance`), that replays through the project's Perceptron with exactly M mistakes.

The assumption class, exactly. Sequences (x_t, y_t), t = 1..M, y_t in {-1, +1}, x_t in R^d, with

- ||x_t|| <= R for every t;
- a unit vector u with y_t <u, x_t> >= gamma for every t;
- any dimension d (d >= M + 1 suffices for every Gram matrix below);

presented to the Perceptron from w_1 = 0, updating w_{t+1} = w_t + y_t x_t on a mistake. W.l.o.g. the
sequence presents only mistakes: a correct round changes nothing, so deleting it leaves the same run, the
same mistakes and the same class. With z_t = y_t x_t and G the (M+1) x (M+1) Gram matrix of (u, z_1..z_M)
(index 0 is u), the sequence is in the class and makes a mistake at every round iff

- G_00 = 1 (u is a unit vector),
- G_tt <= R^2 (the radius),
- G_0t >= gamma (the margin),
- score_t := <w_t, z_t> = sum_{s<t} G_st <= 0 (a mistake; round 1 has w_1 = 0, score 0: no constraint),
- G is positive semi-definite,

and every PSD G with these properties is the Gram matrix of such vectors in R^rank(G) (factor it), so
the class "in any dimension" is exactly this convex set. For a *fixed* dimension d the class adds
rank(G) <= d, which is not convex: the SDP's values are then only upper bounds of the worst case in R^d
(with d >= M + 1 they are exact; the closed forms below are attained in R^M).

Tie convention. "Score 0 counted as a mistake" (the constraint <= 0) is what the project's learner
(:class:`pipeline.learners.perceptron.Perceptron`) allows under each of its three ``tie`` settings,
because the adversary picks the label: under ``negative`` (sgn 0 = -1, the default) and ``mistake`` a
round with w.x = 0 and label +1 is an update, under ``positive`` one with label -1 is. So the non-strict
SDP is the exact worst case of the project's Perceptron under every ``tie``. The *strict* rule (update
iff y w.x < 0) is not one of the learner's settings; taken literally it never leaves w_1 = 0 (every score
of w_1 is 0, never < 0), so it makes 0 mistakes on every sequence. The meaningful strict variant here,
``strict=True``, counts round 1 as a mistake (at w_1 = 0 any deterministic rule predicts one fixed label,
and the adversary gives the other) and requires score_t < 0 at every later round.

Closed form (proved, and checked by the tests): g*(M) := max gamma such that M mistakes are possible

    g*(M) = R / sqrt(M).

Upper bound (Novikoff's argument, in Gram form). Let w = z_1 + ... + z_M. Then
||w||^2 = sum_t G_tt + 2 sum_t score_t <= M R^2 and <u, w> = sum_t G_0t >= M g; the 2 x 2 compression of
G onto (u, w) is PSD, so <u, w>^2 <= ||u||^2 ||w||^2, i.e. M^2 g^2 <= M R^2 and g <= R/sqrt(M). As an
explicit SDP dual certificate (the dual is stated below): mu_t = 1/M, nu = R/(2 sqrt M),
lam_t = 1/(2 R M^{3/2}), sigma_t = 2 lam_t makes the dual slack matrix S = v v^T with
v = (sqrt(nu), -sqrt(lam), ..., -sqrt(lam)), PSD, and the dual objective nu + M R^2 lam = R/sqrt(M).
Attained: u = (e_1 + ... + e_M)/sqrt(M), z_t = R e_t (G_0t = R/sqrt(M), G_tt = R^2, every score 0).
Equality forces every score to be 0, every ||z_t|| = R and u = w/||w||: at gamma = R/sqrt(M) exactly,
every worst instance is all ties.

Hence the largest number of mistakes (:func:`worst_case_mistakes`) is, with q = (R/gamma)^2 and
0 < gamma <= R (gamma > R: no sequence at all, 0),

- non-strict: max{M : gamma <= R/sqrt(M)} = floor(q), Novikoff's bound exactly (attained);
- strict: M = 1 needs gamma <= R; M >= 2 needs gamma < R/sqrt(M) (equality would force all ties, which
  the strict rule does not count), and every gamma < R/sqrt(M) admits a strict sequence (tilt z_t,
  t >= 2, of the tie instance by a small angle phi towards -w_t: scores -R sin(phi) ||w_t|| < 0, margins
  -> R/sqrt(M) as phi -> 0); so the sup over the strict class is not attained at integer q, and the value
  is floor(q) when q is not an integer, q - 1 when q is an integer >= 2, and 1 when q = 1
  (= max(min(1, floor q), ceil(q) - 1)).

The SDP (:func:`max_margin`), with an optional score slack tau >= 0 (tau = 0 is the class above):

    maximise g over (G symmetric, g)  s.t.  G_00 = 1 [nu],  G_tt <= R^2 [lam_t >= 0],
        g <= G_0t [mu_t >= 0],  sum_{s<t} G_st <= -tau, t >= 2 [sigma_t >= 0],  G PSD [S].

Its Lagrangian dual: minimise nu + R^2 sum lam_t - tau sum sigma_t s.t. sum mu_t = 1 and
S = nu E_00 + sum lam_t E_tt - sum mu_t (E_0t + E_t0)/2 + sum sigma_t A_t PSD, with A_t the symmetric
matrix of score_t (1/2 at (s, t) and (t, s), s < t). Any such (nu, lam, mu, sigma) bounds g from above;
:func:`max_margin` evaluates it at the solver's dual values (``dual``) and also repairs them into an
exactly dual-feasible point (clip, renormalise mu, raise nu and every lam_t by -lambda_min(S) and a pad, more
until the slack matrix is proven PSD), whose objective, summed in rational arithmetic and rounded upwards, is an
upper bound of g* whatever the solver did (``upper``, :func:`dual_bound`).

Floating point of the instances (:func:`instance`). A worst instance at gamma = R/sqrt(M) is all ties
(above), which only an exact construction replays correctly (the orthonormal one: every product in w.x is
exactly 0). Below it, the SDP is solved with the margin raised half-way to R/sqrt(M) and the smallest
score slack maximised, so every score is <= -tau with tau far above both the solver's accuracy and the
rounding of the replay; the radius and margin of the returned rows are then certified in exact rational
arithmetic (:func:`certify_instance`).

Sizes. One probe at M is an (M+1) x (M+1) SDP through cvxpy + Clarabel: ~0.01 s at M = 5, ~0.8 s at
M = 30, ~5 s at M = 63 (Clarabel's PSD block is dense in the M(M+1)/2 entries; :func:`sdp_seconds` is the
model the callers' estimates use), so :func:`worst_case_mistakes` probes geometrically and bisects, and caches
probes (:func:`probe`). Only the SDP functions are limited to M <= MAX_M: the tie instance and the exact
certificate of an instance need no solver, and their cost is in the non-zeros of the rows
(:func:`certify_instance`: x_t = R e_t, M rows, costs O(M) exact operations, so M = 5000 takes milliseconds).

Rounding. Every upper end this module reports is rounded outwards: ``upper`` is the objective of an exactly
feasible dual point (its slack matrix proven PSD by :func:`pipeline.numerics.certified_psd`, its objective
summed in rational arithmetic and rounded upwards, :func:`float_up`), and ``radius`` the smallest float whose
square is at least the exact one.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pipeline.numerics import certified_psd
from pipeline.numerics import positive as _check_positive
from pipeline.solvers import solve_sdp

TIES = ("negative", "positive", "mistake")  # pipeline.learners.perceptron.TIES (not imported: solvers stay below)
MAX_M = 200  # the largest M an SDP accepts: a 201 x 201 SDP already takes minutes (tie_instance has no such limit)
SDP_SECONDS = 2e-5  # sdp_seconds: ~c (M + 1)^3 s per SDP on this project's reference machine (5 s at M = 63)
BAND = 1e-8  # relative to R: |gamma - g_sdp(M)| within this is decided by the proven closed form (see below)
BOUNDARY = 1e-6  # relative to R: below this room under R/sqrt(M), instance() returns the exact tie instance
# Clarabel's attempts, in order, until one reports "optimal": 1e-10 (at M = 21 it stops "almost solved",
# reported as optimal_inaccurate, though within ~3e-12), then 1e-9, then its defaults (1e-8).


@dataclass(frozen=True)
class MarginSDP:
    """One solve of the margin SDP (module docstring) at M mistakes.

    Attributes
    ----------
    M, R, tau : the problem: M mistakes, radius R, score slack tau (0: the class itself).
    value : the solver's reported optimal value (the primal objective g).
    primal : min_t G_0t of the returned G: the margin the returned point achieves.
    dual : the dual objective nu + R^2 sum lam - tau sum sigma at the solver's dual values.
    gap : dual - primal (as computed, not clipped at 0).
    upper : the objective of the solver's duals repaired into an exactly feasible dual point (its slack matrix
        proven PSD, the objective summed exactly and rounded upwards): an upper bound of the SDP's optimum whatever
        the solver did; inf when no repair is proven.
    infeasibility : the largest violation of a primal constraint by the returned G (the PSD one as
        -lambda_min(G)).
    closed_form : R / sqrt(M) when tau = 0 (module docstring), else nan.
    status : the solver's status ("optimal", "optimal_inaccurate", ...).
    seconds : wall time of the whole solve (cvxpy's compilation included); solve_seconds: the solver's own.
    G : the returned (M+1) x (M+1) Gram matrix of (u, z_1..z_M).
    """

    M: int
    R: float
    tau: float
    value: float
    primal: float
    dual: float
    gap: float
    upper: float
    infeasibility: float
    closed_form: float
    status: str
    seconds: float
    solve_seconds: float
    G: np.ndarray


@dataclass(frozen=True)
class Instance:
    """A worst-case sequence, ready for replay through :class:`pipeline.learners.perceptron.Perceptron`.

    Attributes
    ----------
    X : (M, r) rows x_t = y_t z_t, in presentation order.
    y : (M,) labels in {-1.0, +1.0}.
    u : (r,) the comparator direction (not exactly of norm 1 in floating point: the certificate divides by
        its exact norm).
    tie : the learner's ``tie`` setting the labels were chosen for (the first round, at w_1 = 0, is always a
        tie, and its label must be the one that tie gets wrong).
    margin : a float <= the exact min_t y_t <u, x_t> / ||u|| of the rows (certified in rational arithmetic).
    radius : a float >= the exact max_t ||x_t||.
    slack : min over t >= 2 of -score_t evaluated exactly from the rows: 0 for the tie instance, > 0 for the
        SDP's (every later round is then a strict mistake, for every tie setting); +inf when M = 1.
    source : "sdp" (factored from the SDP's G) or "ties" (the exact orthonormal instance, at the boundary).
    sdp : the solve the rows were factored from (None for "ties").
    """

    X: np.ndarray
    y: np.ndarray
    u: np.ndarray
    tie: str
    margin: float
    radius: float
    slack: float
    source: str
    sdp: MarginSDP | None


# --- the SDP ---------------------------------------------------------------------------------------------


def _check_M(M: object, limit: int | None = MAX_M) -> int:  # noqa: N802 - the mistake count M
    """M as an int in [1, ``limit``] (``limit`` None: any M >= 1, for what needs no SDP), else ValueError."""
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or not (1 <= int(M) and (limit is None or int(M) <= limit)):
        what = f"in [1, {limit}] (an (M+1) x (M+1) SDP)" if limit is not None else ">= 1"
        raise ValueError(f"M: an integer {what}, got {M!r}")
    return int(M)


def sdp_seconds(M: int) -> float:
    """A rough estimate of one (M+1) x (M+1) margin SDP's wall time (seconds): the callers' up-front estimates."""
    return SDP_SECONDS * (M + 1) ** 3


def float_up(q: Fraction) -> float:
    """The smallest float >= the rational ``q``: ``float(q)`` is correctly rounded (nearest), then one step up
    when that fell below. An upper end computed exactly is reported with this, never rounded to nearest."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def float_down(q: Fraction) -> float:
    """The largest float <= the rational ``q`` (:func:`float_up`'s other side)."""
    f = float(q)
    return f if Fraction(f) <= q else math.nextafter(f, -math.inf)


def score_matrix(M: int) -> np.ndarray:
    """L with L[t, s] = 1 for s < t: score_t = (L * Z).sum(1) for the Gram block Z of z_1..z_M (0-based t)."""
    return np.tril(np.ones((M, M)), -1)


def dual_matrix(M: int, nu: float, lam: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """The dual slack S = nu E_00 + sum lam_t E_tt - sum mu_t sym(E_0t) + sum sigma_t A_t (module docstring).

    ``lam`` and ``mu`` have M entries (t = 1..M), ``sigma`` has M - 1 (t = 2..M)."""
    S = np.zeros((M + 1, M + 1))
    S[0, 0] = nu
    S[np.arange(1, M + 1), np.arange(1, M + 1)] = lam
    S[0, 1:] = S[1:, 0] = -np.asarray(mu) / 2.0
    for k, t in enumerate(range(2, M + 1)):  # A_t: 1/2 at (s, t) and (t, s), s = 1..t-1
        S[1:t, t] += sigma[k] / 2.0
        S[t, 1:t] += sigma[k] / 2.0
    return S


def closed_form_dual(M: int, R: float = 1.0) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The explicit optimal dual (nu, lam, mu, sigma) of the module docstring: S = v v^T, objective R/sqrt(M)."""
    M, R = _check_M(M), _check_positive("R", R)
    nu = R / (2.0 * math.sqrt(M))
    lam = np.full(M, 1.0 / (2.0 * R * M**1.5))
    return nu, lam, np.full(M, 1.0 / M), np.full(M - 1, 2.0 * lam[0])


def _problem(M: int, R: float, tau: float, gamma: float | None) -> tuple:
    """cvxpy problem: maximise g (gamma None) or the score slack s (margins >= gamma); returns
    (problem, G, objective variable, the four constraint groups)."""
    import cvxpy as cp

    G = cp.Variable((M + 1, M + 1), symmetric=True)
    t_var = cp.Variable()
    unit = G[0, 0] == 1.0
    radius = cp.diag(G)[1:] <= R**2
    margin = (G[0, 1:] >= t_var) if gamma is None else (G[0, 1:] >= gamma)
    psd = G >> 0
    cons = [unit, radius, margin, psd]
    scores = None
    if M >= 2:
        per_row = cp.sum(cp.multiply(score_matrix(M), G[1:, 1:]), axis=1)[1:]
        scores = (per_row <= -tau) if gamma is None else (per_row <= -t_var)
        cons.append(scores)
    return cp.Problem(cp.Maximize(t_var), cons), G, t_var, (unit, radius, margin, scores, psd)


def _violation(G: np.ndarray, M: int, R: float, tau: float, margin_lo: float) -> float:
    """Largest violation of the primal constraints by G (margin_lo: the margin it must reach)."""
    v = [abs(G[0, 0] - 1.0), float(np.max(np.diag(G)[1:] - R**2)), float(np.max(margin_lo - G[0, 1:])),
         float(-np.linalg.eigvalsh((G + G.T) / 2.0)[0])]
    if M >= 2:
        v.append(float(np.max((score_matrix(M) * G[1:, 1:]).sum(axis=1)[1:] + tau)))
    return max(0.0, *v)


def dual_bound(M: int, R: float, tau: float, S: np.ndarray) -> float:
    """The upper bound of the SDP's optimum that a dual slack matrix ``S`` (of :func:`dual_matrix`'s form, as
    stored) proves, rounded upwards; inf if S is not proven PSD or has no weight on the margins.

    Read from S's own entries, so nothing is lost to the rounding of building it: nu = S_00, lam_t = S_tt,
    mu_t = -2 S_0t, sigma_t = 2 S_1t (every entry of A_t's column); then for every feasible (G, g),
    0 <= <S, G> <= nu + R^2 sum lam - g sum mu - tau sum sigma, so g <= (nu + R^2 sum lam - tau sum sigma) / sum mu,
    summed in rational arithmetic. PSD is proven by :func:`pipeline.numerics.certified_psd` (Cholesky with its
    rounding bounded)."""
    lam, mu = np.diag(S)[1:], -2.0 * S[0, 1:]
    sigma = 2.0 * S[1, 2:] if M >= 2 else np.zeros(0)
    if S[0, 0] < 0 or np.any(lam < 0) or np.any(mu < 0) or np.any(sigma < 0) or not np.any(mu > 0):
        return math.inf
    if not (np.array_equal(S, S.T) and np.array_equal(np.triu(S[1:, 1:], 1), np.triu(score_matrix(M).T * S[1, 1:], 1))):
        return math.inf  # not of dual_matrix's form: the entries above would not be the point's
    if not certified_psd(S):
        return math.inf
    top = Fraction(float(S[0, 0])) + Fraction(R) ** 2 * sum(map(Fraction, lam.tolist()), Fraction(0))
    top -= Fraction(tau) * sum(map(Fraction, sigma.tolist()), Fraction(0))
    return float_up(top / sum(map(Fraction, mu.tolist()), Fraction(0)))


def _dual_ends(M: int, R: float, tau: float, nu: float, lam: np.ndarray, mu: np.ndarray,
               sigma: np.ndarray) -> tuple[float, float]:
    """(dual objective at the values as given, the upper bound proven by the repaired dual point: clipped at 0,
    mu renormalised, nu and every lam_t raised by a shift until :func:`dual_bound` proves its slack PSD)."""
    dual = nu + R**2 * float(lam.sum()) - tau * float(sigma.sum())
    lam_c, sigma_c, mu_c = np.maximum(lam, 0.0), np.maximum(sigma, 0.0), np.maximum(mu, 0.0)
    if not mu_c.sum() > 0:
        return dual, math.inf
    mu_c = mu_c / mu_c.sum()
    S = dual_matrix(M, nu, lam_c, mu_c, sigma_c)
    n = M + 1
    pad = 4.0 * n * float(np.finfo(float).eps) * float(np.linalg.norm(S))  # eigvalsh's backward error, generously
    shift = max(0.0, -float(np.linalg.eigvalsh(S)[0])) + pad  # S + shift I is PSD, up to the test's own allowance
    for _ in range(40):  # each failed proof doubles the shift (a few suffice: the first is generous)
        upper = dual_bound(M, R, tau, dual_matrix(M, max(nu, 0.0) + shift, lam_c + shift, mu_c, sigma_c))
        if math.isfinite(upper):
            return float(dual), upper
        shift = 2.0 * shift + 4.0 * n * float(np.finfo(float).eps) * max(float(np.linalg.norm(S)), 1e-300)
    return float(dual), math.inf


def max_margin(M: int, R: float = 1.0, tau: float = 0.0) -> MarginSDP:
    """The largest margin gamma that still lets the Perceptron make M mistakes: the SDP of the module
    docstring, whose optimum is g*(M) = R/sqrt(M) at tau = 0 (proved there).

    Parameters
    ----------
    M : the number of mistakes (1..MAX_M).
    R : the radius.
    tau : score slack: every score_t, t >= 2, must be <= -tau (0: the class; > 0: robust instances).

    Examples
    --------
    >>> r = max_margin(4, R=2.0)
    >>> abs(r.value - 1.0) < 1e-7, abs(r.gap) < 1e-7, r.upper >= 1.0 - 1e-9
    (True, True, True)
    """
    M, R = _check_M(M), _check_positive("R", R)
    tau = float(tau)
    if not (math.isfinite(tau) and tau >= 0):
        raise ValueError(f"tau: a finite number >= 0, got {tau!r}")
    problem, G, g, (unit, radius, margin, scores, _) = _problem(M, R, tau, None)
    start = time.perf_counter()
    status = solve_sdp(problem)
    seconds = time.perf_counter() - start
    closed = R / math.sqrt(M) if tau == 0 else math.nan
    solve_seconds = float(getattr(problem.solver_stats, "solve_time", None) or math.nan)
    if G.value is None or g.value is None:
        nan = math.nan
        return MarginSDP(M, R, tau, nan, nan, nan, nan, math.inf, math.inf, closed, status, seconds, solve_seconds,
                         np.full((M + 1, M + 1), nan))
    Gv = np.asarray(G.value, dtype=np.float64)
    Gv = (Gv + Gv.T) / 2.0
    nu = float(unit.dual_value)
    lam = np.atleast_1d(np.asarray(radius.dual_value, dtype=np.float64))
    mu = np.atleast_1d(np.asarray(margin.dual_value, dtype=np.float64))
    sigma = np.atleast_1d(np.asarray(scores.dual_value, dtype=np.float64)) if scores is not None else np.zeros(0)
    dual, upper = _dual_ends(M, R, tau, nu, lam, mu, sigma)
    primal = float(Gv[0, 1:].min())
    return MarginSDP(M=M, R=R, tau=tau, value=float(g.value), primal=primal, dual=dual, gap=dual - primal,
                     upper=upper, infeasibility=_violation(Gv, M, R, tau, primal), closed_form=closed,
                     status=status, seconds=seconds, solve_seconds=solve_seconds, G=Gv)


@functools.lru_cache(maxsize=MAX_M)
def probe(M: int) -> MarginSDP:
    """max_margin(M, 1), cached. By homogeneity (G -> D G D, D = diag(1, R, ..., R), maps the class at radius 1
    and margin g onto the class at radius R and margin R g), the SDP at R is R times this one."""
    return max_margin(M, 1.0)


# --- the worst case over M --------------------------------------------------------------------------------


def _exact_feasible(M: int, R: float, gamma: float, strict: bool) -> bool:
    """The proven closed form, in exact rational arithmetic on the floats given (module docstring)."""
    g2, R2 = Fraction(gamma) ** 2 * M, Fraction(R) ** 2
    return g2 < R2 if (strict and M >= 2) else g2 <= R2


def feasible(M: int, R: float, gamma: float, strict: bool = False) -> tuple[bool, str]:
    """Whether the class admits M mistakes, from the SDP: (answer, how it was decided).

    "sdp": gamma is below the SDP's achieved value (feasible) or above its repaired dual bound (infeasible)
    by more than BAND * R. Within that band (gamma within ~1e-8 R of R/sqrt(M), where no solver can
    tell = from <) the proven closed form decides, in exact arithmetic on the given floats: "closed_form".
    """
    M, R, gamma = _check_M(M), _check_positive("R", R), _check_positive("gamma", gamma)
    if M == 1:  # no score constraint: feasible iff gamma <= R (strict too: round 1 is counted)
        strict = False
    r, ratio = probe(M), gamma / R  # the SDP at radius 1 (homogeneity, :func:`probe`)
    if r.status in ("optimal", "optimal_inaccurate"):
        if ratio < r.primal - BAND and r.infeasibility <= BAND:
            return True, "sdp"
        if ratio > r.upper + BAND:
            return False, "sdp"
    return _exact_feasible(M, R, gamma, strict), "closed_form"


def worst_case_mistakes(R: float, gamma: float, strict: bool = False, limit: int = 63) -> int:
    """The largest M such that the class (module docstring) admits M mistakes, by the SDP.

    Feasibility is monotone in M (a prefix of an M-mistake sequence is an (M-1)-mistake sequence), so M is
    probed at 1, 2, 4, ... up to ``limit`` + 1 and then bisected; each probe is one :func:`feasible`. The value
    is floor((R/gamma)^2) (Novikoff's bound, attained) with ``strict=False``; with ``strict=True`` (score 0
    not a mistake after round 1) it is one less when (R/gamma)^2 is an integer >= 2 (module docstring).
    gamma > R: no sequence exists, 0.

    Values up to ``limit`` are exact (M = limit + 1 is probed to know); ValueError when more than ``limit``
    mistakes are possible (raise it, at the cost of SDPs of that size).

    Examples
    --------
    >>> worst_case_mistakes(1.0, 0.5), worst_case_mistakes(1.0, 0.5, strict=True), worst_case_mistakes(1.0, 0.3)
    (4, 3, 11)
    """
    R, gamma = _check_positive("R", R), _check_positive("gamma", gamma)
    limit = _check_M(limit)
    _check_M(limit + 1)
    ok = functools.lru_cache(maxsize=None)(lambda M: feasible(M, R, gamma, strict)[0])
    if not ok(1):
        return 0
    lo, hi = 1, None  # ok(lo); not ok(hi)
    while hi is None:
        nxt = min(2 * lo, limit + 1)
        if nxt == lo:  # lo == limit + 1, feasible
            raise ValueError(f"limit: the class admits more than {limit} mistakes at R={R!r}, gamma={gamma!r}; "
                             f"raise limit (an (M+1) x (M+1) SDP per probe, up to M = limit + 1)")
        if ok(nxt):
            lo = nxt
        else:
            hi = nxt
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


# --- extracted instances -----------------------------------------------------------------------------------


def _first_label(tie: str) -> float:
    if tie not in TIES:
        raise ValueError(f"tie: one of {', '.join(TIES)}, got {tie!r}")
    return -1.0 if tie == "positive" else 1.0  # the label the tie (w.x = 0) gets wrong


def sqrt_down(q: Fraction) -> float:
    """The largest float f >= 0 with f^2 <= q (q >= 0)."""
    f = math.sqrt(float(q))
    while f > 0 and Fraction(f) ** 2 > q:
        f = math.nextafter(f, 0.0)
    while Fraction(math.nextafter(f, math.inf)) ** 2 <= q:
        f = math.nextafter(f, math.inf)
    return f


def sqrt_up(q: Fraction) -> float:
    """The smallest float f >= 0 with f^2 >= q (q >= 0)."""
    f = sqrt_down(q)
    return f if Fraction(f) ** 2 == q else math.nextafter(f, math.inf)


def certify_instance(X: np.ndarray, y: np.ndarray, u: np.ndarray) -> tuple[float, float, float]:
    """(margin, radius, slack) of the rows, exactly: every product and sum in rational arithmetic on the
    floats as stored, over the non-zero entries only (a zero contributes exactly 0), so the cost is in the
    rows' non-zeros: O(M) for the tie instance x_t = R e_t, O(M r) for a dense M x r instance.

    margin : a float <= min_t y_t <u, x_t> / ||u|| (-inf if some y_t <u, x_t> <= 0).
    radius : a float >= max_t ||x_t||.
    slack : min over t >= 2 of -<w_t, y_t x_t> with w_t = sum_{s<t} y_s x_s (the scores if every round is
        an update), as a float rounded downwards (towards 0 when positive); +inf when M = 1.
    """
    X, y, u = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), np.asarray(u, dtype=np.float64)
    uq = {int(j): Fraction(float(u[j])) for j in np.flatnonzero(u)}
    u2 = sum((v * v for v in uq.values()), Fraction(0))
    w: dict[int, Fraction] = {}
    a_min: Fraction | None = None
    r2 = Fraction(0)
    slack = math.inf
    for t in range(X.shape[0]):
        cols = np.flatnonzero(X[t])
        yt = Fraction(float(y[t]))
        z = {int(j): yt * Fraction(v) for j, v in zip(cols.tolist(), X[t, cols].tolist())}  # y_t x_t, exactly
        a = sum((uq[j] * v for j, v in z.items() if j in uq), Fraction(0))  # y_t <u, x_t>
        a_min = a if a_min is None else min(a_min, a)
        r2 = max(r2, sum((v * v for v in z.values()), Fraction(0)))
        if t >= 1:
            s = -sum((w[j] * v for j, v in z.items() if j in w), Fraction(0))
            slack = min(slack, float_down(s))
        for j, v in z.items():
            w[j] = w.get(j, Fraction(0)) + v
    if u2 == 0 or a_min is None or a_min <= 0:
        margin = -math.inf
    else:
        margin = sqrt_down(a_min * a_min / u2)
    return margin, sqrt_up(r2), slack


def tie_instance(M: int, R: float = 1.0, tie: str = "negative") -> Instance:
    """The exact worst instance at gamma = R/sqrt(M): x_t = R e_t in R^M, u = (1, ..., 1)/sqrt(M) (stored as
    the all-ones vector, whose exact normalisation is what the certificate uses), every label the one
    ``tie`` gets wrong: every score is exactly 0 in floating point (each product is 0 * R or R * 0).

    No solver: any M >= 1 (the rows are the dense M x M matrix, 8 M^2 bytes; the caller bounds M), certified in
    O(M) exact operations (:func:`certify_instance` reads the non-zeros)."""
    M, R = _check_M(M, None), _check_positive("R", R)
    label = _first_label(tie)
    X, y, u = label * R * np.eye(M), np.full(M, label), np.ones(M)
    margin, radius, slack = certify_instance(X, y, u)
    return Instance(X=X, y=y, u=u, tie=tie, margin=margin, radius=radius, slack=slack, source="ties", sdp=None)


def _robust_sdp(M: int, R: float, gamma: float) -> MarginSDP:
    """maximise the score slack s: G_0t >= gamma, score_t <= -s (t >= 2), G_tt <= R^2, G_00 = 1, G PSD."""
    problem, G, s, _ = _problem(M, R, 0.0, gamma)
    start = time.perf_counter()
    status = solve_sdp(problem)
    seconds = time.perf_counter() - start
    solve_seconds = float(getattr(problem.solver_stats, "solve_time", None) or math.nan)
    if G.value is None or s.value is None:
        raise RuntimeError(f"the robust instance SDP failed at M={M}, R={R}, gamma={gamma}: status {status}")
    Gv = np.asarray(G.value, dtype=np.float64)
    Gv = (Gv + Gv.T) / 2.0
    tau = float(s.value)
    nan = math.nan
    return MarginSDP(M=M, R=R, tau=tau, value=float(Gv[0, 1:].min()), primal=float(Gv[0, 1:].min()), dual=nan,
                     gap=nan, upper=nan, infeasibility=_violation(Gv, M, R, tau, gamma), closed_form=nan,
                     status=status, seconds=seconds, solve_seconds=solve_seconds, G=Gv)


def instance(M: int, R: float = 1.0, gamma: float | None = None, tie: str = "negative",
             labels: str = "alternating") -> Instance:
    """A sequence in the class (radius R, margin gamma) on which the Perceptron makes exactly M mistakes.

    gamma None: R/sqrt(M) (the tie instance); M = 1: the tie instance too (margin R). If gamma is above the SDP's
    worst-case margin g*(M), no such
    sequence exists: ValueError. Within BOUNDARY * R below it, :func:`tie_instance` (every worst instance
    is all ties there, and only an exact construction replays ties correctly). Otherwise the SDP of
    :func:`_robust_sdp` at the margin half-way between gamma and g*(M), factored: G = Q diag(e) Q^T,
    eigenvalues below 1e-12 max(e) dropped (the rest kept, clipped at 0), rows V = Q sqrt(e) give u = V_0 and
    z_t = V_t in R^rank; scaled by a common factor so that max ||z_t|| <= R (1 - 1e-12) (scores keep their
    signs, margins shrink by that factor); labels y_1 = the one ``tie`` gets wrong at w_1 = 0, then
    alternating (``labels="alternating"``) or all y_1 (``"constant"``); x_t = y_t z_t. Then
    :func:`certify_instance` checks radius <= R, margin >= gamma and every later score < 0, exactly, or
    raises RuntimeError.
    """
    M, R = _check_M(M), _check_positive("R", R)
    first = _first_label(tie)
    if labels not in ("alternating", "constant"):
        raise ValueError(f"labels: alternating or constant, got {labels!r}")
    if gamma is None:
        return tie_instance(M, R, tie)
    gamma = _check_positive("gamma", gamma)
    if not feasible(M, R, gamma)[0]:
        raise ValueError(f"gamma: {gamma!r} exceeds R/sqrt(M) ~ {R / math.sqrt(M)!r} (exactly, on the floats "
                         f"given): no sequence of the class makes M={M} mistakes")
    room = R * probe(M).primal - gamma
    if room < BOUNDARY * R or M == 1:
        inst = tie_instance(M, R, tie)
        if not inst.margin >= gamma:  # not reached: feasible() decided this band exactly
            raise RuntimeError(f"the tie instance's margin {inst.margin!r} is below gamma={gamma!r}")
        return inst
    sdp = _robust_sdp(M, R, gamma + room / 2.0)
    e, Q = np.linalg.eigh(sdp.G)
    keep = e > 1e-12 * max(float(e[-1]), 1e-300)
    V = Q[:, keep] * np.sqrt(e[keep])
    u, Z = V[0], V[1:]
    norms = np.linalg.norm(Z, axis=1)
    Z = Z * (R * (1.0 - 1e-12) / float(norms.max()))
    y = np.full(M, first)
    if labels == "alternating":
        y[1::2] = -first
    X = y[:, None] * Z
    margin, radius, slack = certify_instance(X, y, u)
    if not (radius <= R and margin >= gamma and slack > 0):
        raise RuntimeError(f"the extracted instance failed its certificate: radius {radius!r} (R={R!r}), margin "
                           f"{margin!r} (gamma={gamma!r}), slack {slack!r}")
    return Instance(X=X, y=y, u=u, tie=tie, margin=margin, radius=radius, slack=slack, source="sdp", sdp=sdp)
