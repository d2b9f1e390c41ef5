"""The exact worst case of Novikoff's setting by SDP (pipeline/solvers/perceptron_worst.py; docs/bounds.md section 1):
the SDP's optimum equals the proven closed form R/sqrt(M) with a small duality gap, the largest number of mistakes
it allows equals the project's Novikoff bound (one less at integer (R/gamma)^2 under the strict rule), and the
extracted worst instances, replayed through the project's own Perceptron, make exactly M mistakes while their
exactly certified radius and margin stay in the class."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from pipeline.bounds.perceptron import NOVIKOFF
from pipeline.data import Tight
from pipeline.learners.perceptron import TIES, Perceptron
from pipeline.solvers.perceptron_worst import (
    certify_instance,
    closed_form_dual,
    dual_matrix,
    feasible,
    instance,
    max_margin,
    tie_instance,
    worst_case_mistakes,
)

SOLVER_TOL = 1e-8  # Clarabel at 1e-10 tolerances lands within ~5e-11 of the optimum up to M = 30


def replay(X: np.ndarray, y: np.ndarray, tie: str) -> int:
    """Mistakes of the project's Perceptron (its compiled kernel, via learn_stream) on (X, y) in the given order."""
    p = Perceptron(tie=tie)
    trace = p.learn_stream(X, y)
    assert int(trace.sum()) == p.mistakes_
    return p.mistakes_


def exact_floor(R: float, gamma: float) -> int:
    """floor((R/gamma)^2) in exact rational arithmetic on the floats given (no rounding at all)."""
    q = (Fraction(R) / Fraction(gamma)) ** 2
    return q.numerator // q.denominator


# --- the SDP and its closed form ----------------------------------------------------------------------------


def test_max_margin_closed_form_and_gap() -> None:
    """g*(M) = R/sqrt(M) for M = 1..30 (the module's proof): the solver's value and the margin of its returned G
    within solver tolerance, a duality gap (dual objective from the constraints' duals) below 1e-8, the
    returned G feasible to 1e-8, and the repaired dual bound never below the closed form (it is a valid upper
    bound, so it must not cut the proven optimum)."""
    for M in range(1, 31):
        r = max_margin(M)
        closed = 1.0 / math.sqrt(M)
        assert r.status == "optimal", (M, r.status)
        assert r.closed_form == closed
        assert abs(r.value - closed) <= SOLVER_TOL and abs(r.primal - closed) <= SOLVER_TOL, (M, r.value)
        assert abs(r.gap) <= SOLVER_TOL and abs(r.dual - closed) <= SOLVER_TOL, (M, r.gap)
        assert r.infeasibility <= SOLVER_TOL, (M, r.infeasibility)
        assert closed <= r.upper <= closed + 1e-7, (M, r.upper)
        assert r.G.shape == (M + 1, M + 1)


@pytest.mark.parametrize("R", [0.5, 3.0])
def test_max_margin_scales_with_R(R: float) -> None:  # noqa: N802 - the radius R
    """The SDP at radius R solved as such (not rescaled) has optimum R/sqrt(M): the homogeneity that
    worst_case_mistakes relies on when it probes at R = 1."""
    for M in (1, 3, 7):
        r = max_margin(M, R)
        assert abs(r.value - R / math.sqrt(M)) <= SOLVER_TOL * R and abs(r.gap) <= SOLVER_TOL * R


@pytest.mark.parametrize("M", [1, 2, 5, 30])
def test_explicit_dual_certificate(M: int) -> None:
    """The docstring's explicit dual point is feasible (S = v v^T is PSD, sum mu = 1) and its objective is exactly
    R/sqrt(M): the closed form is an upper bound by weak duality, independent of any solver."""
    R = 2.0
    nu, lam, mu, sigma = closed_form_dual(M, R)
    S = dual_matrix(M, nu, lam, mu, sigma)
    v = np.concatenate([[math.sqrt(nu)], -math.sqrt(lam[0]) * np.ones(M)])
    np.testing.assert_allclose(S, np.outer(v, v), rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(S)[0] >= -1e-14
    assert abs(mu.sum() - 1.0) <= 1e-14 and (lam >= 0).all() and (sigma >= 0).all()
    assert math.isclose(nu + R**2 * lam.sum(), R / math.sqrt(M), rel_tol=1e-14)


def test_score_slack_lowers_the_margin() -> None:
    """With every later score <= -tau the SDP's optimum drops below R/sqrt(M) (Novikoff: M^2 g^2 <= M R^2 -
    2 (M - 1) tau), and its gap stays small: the robust variant the instances are built from."""
    M, tau = 5, 0.05
    r = max_margin(M, tau=tau)
    assert r.status == "optimal" and abs(r.gap) <= SOLVER_TOL
    assert r.value <= math.sqrt((M - 2 * (M - 1) * tau) / M**2) + SOLVER_TOL < 1 / math.sqrt(M)
    assert math.isnan(r.closed_form)


# --- the worst number of mistakes -----------------------------------------------------------------------------

# (R, gamma) with (R/gamma)^2 exactly an integer in floating point (so the boundary is really at stake) ...
INTEGER = [(1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (5.0, 1.0), (1.0, 0.5), (1.0, 0.25), (1.5, 0.5), (3.0, 0.75)]
# ... and a generic grid at R = 1, (1/gamma)^2 from ~1.02 to ~29.8, none within 1e-3 of an integer
GENERIC = [(1.0, g) for g in (0.99, 0.9, 0.8, 0.7, 0.6, 0.45, 0.4, 0.33, 0.3, 0.27, 0.23, 0.21, 0.19, 0.1832)]


@pytest.mark.parametrize(("R", "gamma"), INTEGER + GENERIC)
def test_worst_case_equals_novikoff(R: float, gamma: float) -> None:
    """The SDP's largest M equals the project's Novikoff bound (its own formula, NOVIKOFF.value, on plain numbers)
    and floor((R/gamma)^2) computed exactly: the bound is attained for every gamma, integer ratios included."""
    q = Fraction(R) ** 2 / Fraction(gamma) ** 2
    assert q.denominator == 1 or abs(q - round(q)) > 1e-3  # the grid is what it says, exactly
    bound = NOVIKOFF.value({"R": R, "gamma_lo": gamma})
    m = worst_case_mistakes(R, gamma)
    assert m == bound == exact_floor(R, gamma), (R, gamma, m, bound)


@pytest.mark.parametrize(("R", "gamma"), INTEGER + GENERIC)
def test_strict_rule_value(R: float, gamma: float) -> None:
    """Strict rule (a later score of 0 is not a mistake): the sup is not attained at integer q = (R/gamma)^2, so
    the value is q - 1 there (1 at q = 1: the first round, at w_1 = 0, is counted under either rule), and floor(q)
    otherwise: max(min(1, floor q), ceil(q) - 1)."""
    q = Fraction(R) ** 2 / Fraction(gamma) ** 2
    expected = max(min(1, math.floor(q)), math.ceil(q) - 1)
    assert worst_case_mistakes(R, gamma, strict=True) == expected
    if q.denominator == 1 and q > 1:
        assert expected == worst_case_mistakes(R, gamma) - 1


@pytest.mark.parametrize(("gamma", "K"), [(1.0 / math.sqrt(3.0), 3), (0.2, 25)])
def test_boundary_decided_exactly(gamma: float, K: int) -> None:
    """gamma = fl(1/sqrt(3)) and fl(0.2) lie just above 1/sqrt(K) exactly (gamma^2 K > 1 in rationals), so K mistakes
    are impossible: the band around R/sqrt(M), where no solver can tell = from <, is decided by the proven form on
    the given floats. Novikoff's formula pads (R/gamma)^2 by (1 + 8u) and says K: a valid bound, one above the exact
    worst case on these floats (by design: it must never fall below the bound of the exact margin)."""
    assert Fraction(gamma) ** 2 * K > 1
    assert feasible(K, 1.0, gamma) == (False, "closed_form")
    assert feasible(K - 1, 1.0, gamma) == (True, "sdp")
    assert worst_case_mistakes(1.0, gamma) == exact_floor(1.0, gamma) == K - 1
    assert NOVIKOFF.value({"R": 1.0, "gamma_lo": gamma}) == K


def test_edges() -> None:
    """gamma > R: no sequence at all (0); the limit refuses rather than under-report; bad arguments raise."""
    assert worst_case_mistakes(1.0, 1.5) == 0
    with pytest.raises(ValueError, match="limit"):
        worst_case_mistakes(1.0, 0.3, limit=8)  # floor(11.1) = 11 > 8
    assert worst_case_mistakes(1.0, 0.3, limit=11) == 11  # the value at the limit itself is exact
    with pytest.raises(ValueError, match="limit"):
        worst_case_mistakes(1.0, 0.3, limit=10)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="gamma: a finite number > 0"):
            worst_case_mistakes(1.0, bad)
    with pytest.raises(ValueError, match="M: an integer in"):
        max_margin(0)


# --- replayed instances -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("M", [1, 5, 30])
def test_orthonormal_instance_replay(M: int) -> None:
    """x_t = R e_t, u = sum e_t / sqrt(M): the closed-form optimum. Under every tie setting, with the label that
    tie gets wrong, the project's Perceptron makes M mistakes; the instance is the project's `tight` dataset, its
    exactly certified margin is R/sqrt(M) (rounded down) and the project's certified Novikoff bound is M."""
    R = 2.0
    for tie in TIES:
        inst = tie_instance(M, R, tie)
        assert replay(inst.X, inst.y, tie) == M
        assert inst.radius == R and inst.slack in (0.0, math.inf)
        assert Fraction(inst.margin) ** 2 <= Fraction(R) ** 2 / M < Fraction(math.nextafter(inst.margin, 9)) ** 2
        ds = Tight(rho=R, n=M, label=int(inst.y[0])).generate(np.random.default_rng(0))
        np.testing.assert_array_equal(ds.X, abs(inst.X))
        out = Perceptron(tie=tie).run(ds, np.random.default_rng(0))
        assert out.quantities["mistakes"] == M == NOVIKOFF.value({"R": ds.stats.R, "gamma_lo": ds.stats.gamma_lo})


@pytest.mark.parametrize("M", [2, 5, 12, 20, 30])
def test_sdp_instance_replay(M: int) -> None:
    """The instance factored from the SDP's G at margins just below and well below R/sqrt(M): exactly M mistakes
    replayed through the project's Perceptron (every tie setting, alternating and constant labels), exactly
    certified radius <= R and margin >= gamma, and every later score strictly negative in exact arithmetic,
    so a rounding of the replay cannot turn a mistake into a correct round."""
    R = 1.5
    for frac in (0.5, 1.0 - 1e-4):
        gamma = frac * R / math.sqrt(M)
        for tie, labels in (("negative", "alternating"), ("positive", "constant"), ("mistake", "alternating")):
            inst = instance(M, R, gamma, tie=tie, labels=labels)
            assert inst.source == "sdp" and inst.sdp is not None
            assert replay(inst.X, inst.y, tie) == M, (M, frac, tie)
            margin, radius, slack = certify_instance(inst.X, inst.y, inst.u)
            assert (margin, radius, slack) == (inst.margin, inst.radius, inst.slack)
            assert radius <= R and margin >= gamma and slack > 0
            if labels == "alternating":
                assert set(inst.y[:2]) == {-1.0, 1.0}
            if tie == "negative":  # round 1 is a tie at w_1 = 0: under the other sign convention it is no mistake
                assert replay(inst.X, inst.y, "positive") < M


def test_instance_at_the_boundary() -> None:
    """At gamma = R/sqrt(M) exactly (M = 4, gamma = 1/2) every worst instance is all ties: the exact tie instance
    is returned, and it replays with M mistakes. Above the boundary no instance exists."""
    inst = instance(4, 1.0, 0.5)
    assert inst.source == "ties" and inst.margin == 0.5 and replay(inst.X, inst.y, inst.tie) == 4
    with pytest.raises(ValueError, match="exceeds"):
        instance(4, 1.0, 0.5000001)
    with pytest.raises(ValueError, match="exceeds"):
        instance(10, 1.0, 1.0 / math.sqrt(10.0))  # fl(1/sqrt(10)) > 1/sqrt(10) exactly
