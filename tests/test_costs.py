"""Label costs Delta for the multiclass learners (docs/bounds.md sections 7 and 8): the step rule against a plain
reference for every preset, Delta(h(x), y) <= the generalized hinge loss example by example, the certified
solvers with costs, the projection radius sqrt(max Delta / lam), the (D) bounds over random costs, and the
one-line errors for bad values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.bounds import bounds_for
from pipeline.bounds.multiclass import LEMMA14_1, LEMMA14_1_RATE
from pipeline.data.multiclass import MulticlassMargin, largest_margin
from pipeline.learners import MulticlassPegasos, MulticlassSGD, MulticlassSVM
from pipeline.learners.base import log_grid
from pipeline.learners.multiclass import _steps, multiclass_step_kernel
from pipeline.params import ParamError
from pipeline.risk import COSTS, cost_losses, cost_matrix, ghinge_losses, zero_one_losses
from pipeline.solvers.multiclass import ball_comparator, multiclass_svm
from pipeline.job.statistics import measure, population_comparator


def _data(seed: int, k: int = 4, d: int = 5, gamma: float = 0.1, noise: float = 0.0, n: int = 120,  # noqa: ANN202
          n_test: int = 1000):
    return MulticlassMargin(k=k, gamma=gamma, rho=1.0, d=d, n=n, n_test=n_test, noise=noise).generate(
        np.random.default_rng(seed))


def _evaluate(ds, out, bound):  # noqa: ANN001, ANN202
    return bound.evaluate(ds.stats.as_dict() | out.stats, out.quantities)


def _random_cost(k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    D = rng.uniform(0.05, 3.0, (k, k))
    np.fill_diagonal(D, 0.0)
    return D


def _reference_steps(X, y, idx, cost, eta, lam, radius):  # noqa: ANN001, ANN202
    """The Delta step rule in plain Python, the kernel's operation order: (Delta + s_j) - s_y, the first
    strict maximum above the own term 0, Pegasos' shrink, then the step and the projection."""
    k, d = cost.shape[0], len(X[0])
    W = [[0.0] * d for _ in range(k)]
    losses = []
    for r, i in enumerate(idx):
        t = r + 1
        x, yi = [float(v) for v in X[i]], int(y[i])
        scores, norm2 = [], 0.0
        for j in range(k):
            s = 0.0
            for c in range(d):
                s += W[j][c] * x[c]
                norm2 += W[j][c] * W[j][c]
            scores.append(s)
        best, value = yi, 0.0
        for j in range(k):
            if j != yi:
                v = float(cost[j, yi]) + scores[j] - scores[yi]
                if v > value:
                    best, value = j, v
        losses.append(0.5 * lam * norm2 + value)
        step = eta
        if lam > 0.0:
            step = 1.0 / (lam * t)
            W = [[w * (1.0 - 1.0 / t) for w in row] for row in W]
        if best != yi:
            for c in range(d):
                W[best][c] -= step * x[c]
                W[yi][c] += step * x[c]
        if radius > 0.0:
            after = sum(w * w for row in W for w in row)
            if after > radius * radius:
                scale = radius / math.sqrt(after)
                W = [[w * scale for w in row] for row in W]
    return np.array(W), np.array(losses)


@pytest.mark.parametrize("cost", [*COSTS, "random"])
@pytest.mark.parametrize(("lam", "radius"), [(0.0, 0.0), (0.1, 0.0), (0.1, 2.0)])
def test_step_kernel_matches_a_plain_reference_for_every_cost(cost: str, lam: float, radius: float) -> None:
    ds = _data(0)
    D = _random_cost(4, 3) if cost == "random" else cost_matrix(cost, 4)
    T = 250
    idx = np.random.default_rng(1).integers(0, ds.y.size, T)
    W_ref, loss_ref = _reference_steps(ds.X, ds.y, idx, D, 0.05, lam, radius)
    grid = log_grid(T, 8)
    for fn in (multiclass_step_kernel, multiclass_step_kernel.py):  # compiled and pure Python
        W, Wsum = np.zeros((4, 5)), np.zeros((4, 5))
        loss = np.empty(T)
        fn(ds.X, ds.y, idx, W, Wsum, 0.05, lam, radius, np.ascontiguousarray(D), 0, grid, np.empty((grid.size, 4, 5)),
           loss, np.empty(T), np.empty(T, dtype=np.int8))
        np.testing.assert_array_equal(W, W_ref)
        np.testing.assert_array_equal(loss, loss_ref)


def test_zero_one_cost_is_the_default_bit_for_bit() -> None:
    """The named zero_one cost, an explicit 0-1 matrix and no cost at all give the same bits everywhere."""
    ds = _data(1, noise=0.1)
    idx = np.random.default_rng(2).integers(0, ds.y.size, 400)
    plain = _steps(ds.X, ds.y, idx, 4, 0.0, 0.1, radius=3.0)
    for cost in ("zero_one", 1.0 - np.eye(4)):
        for a, b in zip(plain, _steps(ds.X, ds.y, idx, 4, 0.0, 0.1, radius=3.0, cost=cost)):
            np.testing.assert_array_equal(a, b)
    W = plain[0]
    np.testing.assert_array_equal(ghinge_losses(ds.X, ds.y, W), ghinge_losses(ds.X, ds.y, W, "zero_one"))
    np.testing.assert_array_equal(zero_one_losses(ds.X, ds.y, W), cost_losses(ds.X, ds.y, W, "zero_one"))
    a, b = multiclass_svm(ds.X, ds.y, 4, 0.05), multiclass_svm(ds.X, ds.y, 4, 0.05, cost="zero_one")
    assert (a.primal, a.dual) == (b.primal, b.dual)
    np.testing.assert_array_equal(a.W, b.W)


def test_presets() -> None:
    assert cost_matrix("ordinal", 4)[0].tolist() == [0.0, 1 / 3, 2 / 3, 1.0]
    assert cost_matrix("absolute", 4)[3].tolist() == [3.0, 2.0, 1.0, 0.0]
    for k in (2, 3, 5):
        for name in COSTS:
            D = cost_matrix(name, k)
            assert np.all(np.diag(D) == 0) and np.all(D[~np.eye(k, dtype=bool)] > 0)
    np.testing.assert_array_equal(cost_matrix("ordinal", 2), cost_matrix("zero_one", 2))  # k = 2: all three agree


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 6), d=st.integers(1, 5), n=st.integers(1, 20),
       scale=st.sampled_from([1e-3, 1.0, 1e3]), ties=st.booleans())
def test_cost_of_the_prediction_is_below_the_generalized_hinge_loss(seed, k, d, n, scale, ties) -> None:  # noqa: ANN001
    """E[L^Delta] <= E[L^g-hinge] holds example by example: Delta(h_W(x), y) <= l(W, (x, y)) for random W, x,
    y and a random valid Delta (ties in the scores included), in floating point."""
    rng = np.random.default_rng(seed)
    D = rng.uniform(0.0, 5.0, (k, k)) * (rng.random((k, k)) < 0.8) + 1e-3
    np.fill_diagonal(D, 0.0)
    W = rng.standard_normal((k, d)) * scale
    if ties:  # equal rows: every score tied
        W[rng.integers(0, k)] = W[0]
        W = np.round(W, 1)
    X = np.round(rng.standard_normal((n, d)), 2 if ties else 16)
    y = rng.integers(0, k, n)
    hinge, delta = ghinge_losses(X, y, W, D), cost_losses(X, y, W, D)
    assert np.all(delta <= hinge) and np.all(hinge >= 0)


@pytest.mark.parametrize("cost", ["ordinal", "absolute", "random"])
def test_multiclass_svm_with_a_cost_is_certified_and_agrees_with_the_conic_solver(cost: str) -> None:
    from pipeline.solvers.multiclass import _svm_cvxpy, _svm_primal_hi

    ds = _data(4, noise=0.1, n=150)
    D = _random_cost(4, 5) if cost == "random" else cost_matrix(cost, 4)
    lam = 0.02
    cert = multiclass_svm(ds.X, ds.y, 4, lam, cost=D)
    assert 0.0 <= cert.gap <= 1e-8 and cert.dual <= cert.primal
    W_cvx, _ = _svm_cvxpy(ds.X, ds.y, 4, lam, D)
    assert _svm_primal_hi(ds.X, ds.y, lam, W_cvx, D) >= cert.dual  # the dual end is a true lower bound
    assert _svm_primal_hi(ds.X, ds.y, lam, W_cvx, D) == pytest.approx(cert.primal, abs=1e-6)
    comp = ball_comparator(ds.X, ds.y, 4, 3.0, D)
    assert comp.lower <= comp.upper <= comp.lower + 1e-6 and np.linalg.norm(comp.U) <= 3.0
    assert comp.upper >= float(ghinge_losses(ds.X, ds.y, comp.U, D).mean()) - 1e-12


@pytest.mark.parametrize(("cost", "lam"), [("absolute", 0.01), ("absolute", 0.001), ("random", 0.003)])
def test_the_optimum_lies_in_the_ball_of_radius_sqrt_max_cost_over_lam(cost: str, lam: float) -> None:
    """Strong duality: lam ||W*||^2 <= max Delta for lam/2 ||W||^2 + mean loss (docs/bounds.md section 8); the
    certified solution is within sqrt(gap / (lam/2)) of W* (strong convexity)."""
    ds = _data(6, noise=0.2, n=200)
    D = _random_cost(4, 7) if cost == "random" else cost_matrix(cost, 4)
    cert = multiclass_svm(ds.X, ds.y, 4, lam / 2.0, cost=D)
    radius = math.sqrt(D.max() / lam)
    assert np.linalg.norm(cert.W) <= radius + math.sqrt(cert.gap / (lam / 2.0)) + 1e-9


def test_the_zero_one_radius_can_be_too_small_for_a_larger_cost() -> None:
    """Why the radius depends on Delta: with |y' - y| the optimum leaves the ball of radius 1/sqrt(lam)."""
    ds = _data(6, gamma=0.3, n=200)
    lam = 0.1
    cert = multiclass_svm(ds.X, ds.y, 4, lam / 2.0, cost="absolute")
    assert np.linalg.norm(cert.W) - math.sqrt(cert.gap / (lam / 2.0)) > 1.0 / math.sqrt(lam)


def test_projected_pegasos_uses_the_cost_radius_and_constant() -> None:
    ds = _data(2, noise=0.1)
    lam = 0.05
    mc = MulticlassPegasos(lam=lam, T=3000, projection=True, cost="absolute")
    out = measure(mc, ds, np.random.default_rng(0))
    r = math.sqrt(3.0 / lam)
    assert np.linalg.norm(mc.W_) <= r * (1 + 1e-12) and out.stats["cost_max"] == 3.0
    assert out.stats["c"] == pytest.approx((lam * r + math.sqrt(2) * ds.stats.R) ** 2, rel=1e-12)
    rows = {b.name: _evaluate(ds, out, b) for b in bounds_for("multiclass_pegasos")}
    assert rows["mc_regret"]["applicable"] and rows["mc_regret"]["holds"]
    assert not rows["mc_high_probability"]["applicable"] and "max Delta" in rows["mc_high_probability"]["reason"]
    assert "risk_cost" in out.stats and out.stats["risk_cost"] <= out.stats["risk_hinge"]


def test_realisable_comparator_scales_with_the_largest_cost() -> None:
    ds = _data(3, gamma=0.1)
    D = cost_matrix("absolute", 4)
    exact = population_comparator(ds, B=30.0, cost=D)  # B >= 3 / gamma
    assert exact["lower"] == 0.0 == exact["upper"] and "max Delta" in exact["how"]
    assert ghinge_losses(ds.X_test, ds.y_test, exact["U"], D).max() == 0.0
    assert ghinge_losses(ds.X_test, ds.y_test, ds.W_star / ds.gamma, D).max() > 0.0  # W*/gamma no longer suffices
    solved = population_comparator(ds, B=15.0, cost=D)  # 1/gamma <= B < 3/gamma: solved, not exact
    assert solved["lower"] <= solved["upper"] and "exact" not in solved["how"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 5), T=st.integers(1, 300), noise=st.sampled_from([0.0, 0.1]),
       B=st.sampled_from([0.5, 3.0, 40.0]), lam=st.sampled_from([1.0, 0.1, 0.01]), projection=st.booleans(),
       cost=st.sampled_from([*COSTS, "random"]))
def test_the_deterministic_bounds_hold_in_every_run_for_any_cost(seed, k, T, noise, B, lam, projection, cost) -> None:  # noqa: ANN001
    ds = _data(seed % 1000, k=k, d=3, gamma=0.1 * largest_margin(k, 3, 1.0), noise=noise, n=50, n_test=1000)
    c = tuple(map(tuple, _random_cost(k, seed % 97).tolist())) if cost == "random" else cost
    out = measure(MulticlassSGD(B=B, T=T, cost=c), ds, np.random.default_rng(seed))
    for bound in (LEMMA14_1, LEMMA14_1_RATE):
        row = _evaluate(ds, out, bound)
        assert row["applicable"] and row["holds"], row
    t, regret = out.curves["regret"]
    curve = LEMMA14_1.curve_of(ds.stats.as_dict() | out.stats, t, out.steps)  # the curve the plots draw
    assert np.all(regret <= curve)  # every prefix, against the bound with its own rounding allowance
    mc = MulticlassPegasos(lam=lam, T=T, projection=projection, cost=c)
    out = measure(mc, ds, np.random.default_rng(seed))
    regret_bound = next(b for b in bounds_for("multiclass_pegasos") if b.name == "mc_regret")
    row = _evaluate(ds, out, regret_bound)
    assert row["applicable"] and row["holds"], row
    if projection:
        assert np.linalg.norm(mc.W_) <= math.sqrt(out.stats["cost_max"] / lam) * (1 + 1e-12)


def test_multiclass_svm_with_a_cost_is_below_cor17_1() -> None:
    from pipeline.bounds.multiclass import COR17_1

    ds = _data(4, k=3, d=4, gamma=0.1, n=300, n_test=5000)
    out = measure(MulticlassSVM(B=10.0, cost="absolute"), ds, np.random.default_rng(0))
    row = _evaluate(ds, out, COR17_1)
    assert out.stats["dual_gap"] <= 1e-6 and row["applicable"] and row["empirical"] <= row["theoretical"]
    assert row["trivial"] == pytest.approx(out.stats["zero_loss_lo"] - out.stats["comparator_upper"])


@pytest.mark.parametrize(("value", "allowed"), [
    ("hamming", "one of zero_one, ordinal, absolute"),
    ([[0, 1], [1, 1]], "zero on the diagonal"),
    ([[0, -1], [1, 0]], "> 0 off it"),
    ([[0, 1, 1], [1, 0, 1]], "k x k matrix"),
    ([[0, float("nan")], [1, 0]], "finite"),
    (3, "k x k matrix"),
])
def test_a_bad_cost_is_one_param_error(value: object, allowed: str) -> None:
    with pytest.raises(ParamError, match="cost=") as info:
        MulticlassPegasos(lam=0.1, cost=value).check()
    assert allowed in str(info.value) and "\n" not in str(info.value)


def test_a_matrix_of_the_wrong_size_is_refused_with_the_data() -> None:
    ds = _data(0, k=3)
    learner = MulticlassSGD(B=1.0, cost=[[0, 1], [1, 0]])
    learner.check()
    with pytest.raises(ParamError, match="a 3 x 3 matrix"):
        learner.check_data(ds)


@pytest.mark.parametrize(("argv", "named"), [
    (["algorithm=multiclass_pegasos", "algorithm.cost=hamming"], "algorithm.cost='hamming'"),
    (["algorithm=multiclass_sgd", "algorithm.cost=[[0,1],[2,3]]"], "algorithm.cost=[[0, 1], [2, 3]]"),
    (["algorithm=multiclass_svm", "algorithm.cost=[[0,1],[1,0]]", "k=3"], "must be a 3 x 3 matrix"),
])
def test_bad_cost_in_the_config_is_one_line(argv: list[str], named: str, one_line_error) -> None:  # noqa: ANN001
    assert named in one_line_error(argv)
