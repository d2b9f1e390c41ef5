"""Multiclass data and certified solvers (docs/bounds.md sections 7-9): the generator's margin, radius,
priors and noise; exact zero loss of W*/gamma; draws; the SVM and ball-comparator certificates against
independent solvers; interval estimates."""

from __future__ import annotations

import re
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pipeline.data import DATASETS, MulticlassBundled, MulticlassMargin, check_labels
from pipeline.data.multiclass import largest_margin
from pipeline.params import POSITIVE, ParamError, UserError
from pipeline.risk import _scores, clopper_pearson, ghinge_losses, mean_ci, zero_one_losses
from pipeline.solvers.multiclass import ball_comparator, multiclass_svm

CASES = [  # k, d, gamma, rho: simplex and polygon W*, small and large rho/gamma
    (5, 10, 0.05, 1.0),
    (3, 2, 0.2, 1.0),
    (5, 2, 0.1, 1.0),
    (4, 6, 0.002, 3.0),
    (2, 20, 0.05, 0.5),
]


def _gen(**kw: float) -> MulticlassMargin:
    return MulticlassMargin(**{"k": 5, "gamma": 0.05, "rho": 1.0, "d": 10, "n": 500, "n_test": 5000, **kw})


def _exact_dot(a: np.ndarray, b: np.ndarray) -> Fraction:
    return sum((Fraction(float(u)) * Fraction(float(v)) for u, v in zip(a, b)), Fraction(0))


def _ghinge_reference(X: np.ndarray, y: np.ndarray, W: np.ndarray) -> np.ndarray:
    S = X @ W.T
    own = S[np.arange(len(y)), y][:, None]
    delta = np.ones_like(S)
    delta[np.arange(len(y)), y] = 0.0
    return np.max(delta + S - own, axis=1)


def _margins(X: np.ndarray, y: np.ndarray, W: np.ndarray) -> np.ndarray:
    S = X @ W.T
    own = S[np.arange(len(y)), y].copy()
    S[np.arange(len(y)), y] = -np.inf
    return own - S.max(axis=1)


def _svm_objective(X: np.ndarray, y: np.ndarray, lam: float, W: np.ndarray) -> float:
    return lam * float(np.sum(W * W)) + float(np.mean(_ghinge_reference(X, y, W)))


# --- The generator ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "d", "gamma", "rho"), CASES)
def test_generator_margin_and_radius(k: int, d: int, gamma: float, rho: float) -> None:
    ds = _gen(k=k, d=d, gamma=gamma, rho=rho, n=400).generate(np.random.default_rng(k + d))
    s = ds.stats
    assert ds.X.shape == (400, d) and ds.y.dtype == np.int64 and ds.X_test.shape == (5000, d)
    assert (s.m, s.d, s.k, s.R) == (400, d, k, rho) and ds.population == "D" and ds.gamma == gamma
    assert abs(np.linalg.norm(ds.W_star) - 1.0) <= 1e-12 and 0 < s.acceptance <= 1
    Xd, yd = ds.draw(2000, np.random.default_rng(1))
    for X, y in ((ds.X, ds.y), (ds.X_test, ds.y_test), (Xd, yd)):
        margins = _margins(X, y, ds.W_star)
        assert margins.min() >= gamma and np.linalg.norm(X, axis=1).max() <= s.R
        # The certified quantities hold in exact arithmetic for the floats handed out.
        for i in np.argsort(margins)[:5]:
            exact = min(_exact_dot(ds.W_star[y[i]], X[i]) - _exact_dot(ds.W_star[j], X[i]) for j in range(k) if j != y[i])
            assert exact >= Fraction(gamma)
            assert _exact_dot(X[i], X[i]) <= Fraction(rho) ** 2
    realised = float(_margins(ds.X, ds.y, ds.W_star).min())
    assert gamma <= s.margin <= realised <= s.margin + 1e-12


@pytest.mark.parametrize(("k", "d", "gamma", "rho"), CASES)
def test_w_star_over_gamma_has_zero_loss_exactly(k: int, d: int, gamma: float, rho: float) -> None:
    """L^{g-hinge}(W*/gamma) == 0 in floating point on the sample, the test sample and draws."""
    ds = _gen(k=k, d=d, gamma=gamma, rho=rho).generate(np.random.default_rng(3))
    V = ds.W_star / ds.gamma
    Xd, yd = ds.draw(20_000, np.random.default_rng(9))
    for X, y in ((ds.X, ds.y), (ds.X_test, ds.y_test), (Xd, yd)):
        assert np.all(ghinge_losses(X, y, V) == 0.0)
        assert np.all(zero_one_losses(X, y, V) == 0.0)


def test_priors_and_noise_rates() -> None:
    k, p, decay, n = 4, 0.15, 0.6, 100_000
    ds = _gen(k=k, d=6, noise=p, prior_decay=decay, n=10, n_test=n).generate(np.random.default_rng(5))
    prior = decay ** np.arange(k) / np.sum(decay ** np.arange(k))
    expected = (1 - p) * prior + p * (1 - prior) / (k - 1)
    freq = np.bincount(ds.y_test, minlength=k) / n
    assert np.all(np.abs(freq - expected) <= 5 * np.sqrt(expected * (1 - expected) / n))
    clean = np.argmax(ds.X_test @ ds.W_star.T, axis=1)  # accepted points have margin > 0
    flipped = np.mean(clean != ds.y_test)
    assert abs(flipped - p) <= 5 * math.sqrt(p * (1 - p) / n)
    # the clean labels follow the priors, and a flip is to a uniform other label
    assert np.all(np.abs(np.bincount(clean, minlength=k) / n - prior) <= 5 * np.sqrt(prior * (1 - prior) / n))
    moved = (ds.y_test - clean) % k
    counts = np.bincount(moved[moved > 0], minlength=k)[1:]
    assert stats.chisquare(counts).pvalue > 1e-4
    assert ds.stats.margin >= ds.gamma  # measured on the clean labels


def test_determinism_and_separate_streams() -> None:
    gen = _gen(n=300)
    a, b = gen.generate(np.random.default_rng(7)), gen.generate(np.random.default_rng(7))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and np.array_equal(a.X_test, b.X_test)
    assert a.stats == b.stats and np.array_equal(a.W_star, b.W_star)
    assert not np.array_equal(a.X, gen.generate(np.random.default_rng(8)).X)
    # the test sample and W* do not depend on the training sample's size: separate streams
    c = _gen(n=50).generate(np.random.default_rng(7))
    assert np.array_equal(c.X_test, a.X_test) and np.array_equal(c.W_star, a.W_star)
    # draw: deterministic given its rng, fresh otherwise, never a copy of the samples
    d1, d2 = a.draw(500, np.random.default_rng(1)), a.draw(500, np.random.default_rng(1))
    assert np.array_equal(d1[0], d2[0]) and np.array_equal(d1[1], d2[1])
    d3 = a.draw(500, np.random.default_rng(2))
    assert not np.array_equal(d1[0], d3[0])
    seen = {row.tobytes() for row in np.vstack([a.X, a.X_test])}
    assert not any(row.tobytes() in seen for row in d1[0])
    assert a.draw(0, np.random.default_rng(1))[0].shape == (0, 10)


def test_generator_speed_does_not_depend_on_luck() -> None:
    """1e5 test points in a handful of batches: the batch size follows the measured acceptance."""
    ds = _gen(n=10, n_test=100_000).generate(np.random.default_rng(0))
    assert ds.X_test.shape == (100_000, 10) and 0.3 < ds.stats.acceptance < 1


def test_bundled_sets() -> None:
    for source, k, d in (("iris", 3, 4), ("wine", 3, 13), ("digits", 10, 64)):
        ds = MulticlassBundled(source=source, standardize=True).generate(np.random.default_rng(0))
        assert ds.k == k and ds.X.shape[1] == d and ds.population == "S" and ds.W_star is None and ds.gamma is None
        assert ds.X_test is ds.X and ds.y_test is ds.y and set(np.unique(ds.y)) == set(range(k))
        assert ds.stats.R >= np.linalg.norm(ds.X, axis=1).max() and math.isnan(ds.stats.margin)
        X, y = ds.draw(300, np.random.default_rng(4))
        rows = {(r.tobytes(), int(c)) for r, c in zip(ds.X, ds.y)}
        assert all((r.tobytes(), int(c)) in rows for r, c in zip(X, y))
        assert np.array_equal(X, ds.draw(300, np.random.default_rng(4))[0])
    ball = MulticlassBundled(source="wine", unit_ball=True).generate(np.random.default_rng(0))
    assert 1.0 <= ball.stats.R <= 1.0 + 1e-14
    assert set(DATASETS) >= {"multiclass_margin", "multiclass_bundled"}


def test_config_composes_and_names_the_key() -> None:
    from hydra import compose, initialize_config_dir

    from pipeline.job.config import _make
    from pipeline.paths import CONF_DIR
    from pipeline.sweep.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("config", overrides=["dataset=multiclass_margin", "++k=4", "n=40", "d=3", "gamma=0.05"])
        bad = compose("config", overrides=["dataset=multiclass_margin", "++k=4", "d=3", "gamma=5"])
        bundled = compose("config", overrides=["dataset=multiclass_bundled", "dataset.source=wine"])
    gen = _make(DATASETS, cfg.dataset, "dataset")
    assert (gen.k, gen.n, gen.d, gen.gamma, gen.n_test) == (4, 40, 3, 0.05, 100_000)
    with pytest.raises(ParamError, match=r"^gamma=5\.0: must be < "):
        _make(DATASETS, bad.dataset, "dataset")
    assert _make(DATASETS, bundled.dataset, "dataset").generate(np.random.default_rng(0)).k == 3


# --- Bad input: one line each ------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"k": 1}, r"^k=1: must be an integer >= 2$"),
    ({"gamma": 0.0}, r"^gamma=0\.0: must be a number > 0"),
    ({"gamma": -1.0}, r"^gamma=-1\.0: must be"),
    ({"gamma": 0.6, "k": 5, "d": 10}, r"^gamma=0\.6: must be < 0\.559.*largest margin"),
    ({"gamma": 0.45, "k": 3, "d": 60}, r"^gamma=0\.45: must be smaller: .*lower gamma"),
    ({"noise": 1.0}, r"^noise=1\.0: must be a probability in \[0, 1\)$"),
    ({"prior_decay": 0.0}, r"^prior_decay=0\.0: must be"),
    ({"n_test": 10}, r"^n_test=10: must be an integer >= 1000$"),
])
def test_bad_generator_parameters(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ParamError, match=pattern) as e:
        _gen(**kwargs).generate(np.random.default_rng(0))
    assert "\n" not in str(e.value)


def test_largest_margin_is_the_limit() -> None:
    for k, d in ((5, 10), (3, 2), (6, 2)):
        top = largest_margin(k, d, 1.0)
        with pytest.raises(ParamError):
            _gen(k=k, d=d, gamma=top).check()
        _gen(k=k, d=d, gamma=0.999 * top).check()  # allowed by check (the pilot may still refuse it)
    ds = _gen(k=3, d=2, gamma=0.5 * largest_margin(3, 2, 1.0), n=2000).generate(np.random.default_rng(0))
    top = largest_margin(3, 2, 1.0)
    assert 0.5 * top <= ds.stats.margin and np.max(ds.X_test @ ds.W_star.T, axis=1).max() <= top + 1e-12


@pytest.mark.parametrize(("y", "k", "pattern"), [
    (np.array([0, 1, 3]), 3, r"^toy: label 3 at row 2 is outside 0\.\.2 \(k=3\)$"),
    (np.array([0, -1, 1]), 2, r"^toy: label -1 at row 1 is outside 0\.\.1"),
    (np.array([0, 0, 2]), 3, r"^toy: class 1 of 0\.\.2 has no examples$"),
    (np.array([0, 0, 0]), 3, r"^toy: classes 1, 2 of 0\.\.2 have no examples$"),
    (np.array([0.0, 1.5]), 2, r"^toy: label 1\.5 is not an integer"),
    (np.array([0, 1]), 1, r"^toy: k=1 classes; a multiclass task needs an integer k >= 2$"),
    (np.array([[0, 1]]), 2, r"^toy: labels must be a 1-D array"),
])
def test_check_labels_one_line(y: np.ndarray, k: int, pattern: str) -> None:
    with pytest.raises(UserError, match=pattern) as e:
        check_labels(y, k, "toy")
    assert "\n" not in str(e.value)


def test_check_labels_accepts_float_integers() -> None:
    out = check_labels(np.array([0.0, 2.0, 1.0]), 3, "toy")
    assert out.dtype == np.int64 and out.tolist() == [0, 2, 1]


def test_bad_bundled_source() -> None:
    with pytest.raises(ParamError, match=r"^source='breast_cancer': must be one of digits, iris, wine$"):
        MulticlassBundled(source="breast_cancer").check()


# --- Losses --------------------------------------------------------------------------------------------


def test_losses_against_reference_and_bit_reproducible() -> None:
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((300, 7)), rng.standard_normal((4, 7))
    y = rng.integers(0, 4, 300)
    g = ghinge_losses(X, y, W)
    assert np.allclose(g, _ghinge_reference(X, y, W), rtol=0, atol=1e-12) and g.min() >= 0
    assert np.array_equal(_scores(X, W), _scores.py(X, W))  # compiled == reference loop, bit for bit
    z = zero_one_losses(X, y, W)
    assert np.array_equal(z, (np.argmax(X @ W.T, axis=1) != y).astype(float)) and np.all(z <= g)
    assert np.all(zero_one_losses(X, y, np.zeros((4, 7))) == 1.0)  # all tied: errors
    assert np.all(ghinge_losses(X, y, np.zeros((4, 7))) == 1.0)
    with pytest.raises(UserError, match=r"labels must be integers in 0\.\.3"):
        ghinge_losses(X, np.full(300, 4), W)


# --- Certified solvers -----------------------------------------------------------------------------------


def _noisy(m: int, k: int = 4, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    ds = _gen(k=k, d=d, gamma=0.05, n=m, n_test=1000, noise=0.2).generate(np.random.default_rng(seed))
    return ds.X, ds.y


def _cvxpy_svm(X: np.ndarray, y: np.ndarray, k: int, lam: float) -> np.ndarray:
    import cvxpy as cp

    m, d = X.shape
    W = cp.Variable((k, d))
    S = X @ W.T
    onehot = np.eye(k)[y]
    own = cp.sum(cp.multiply(S, onehot), axis=1)
    loss = cp.max(S - cp.reshape(own, (m, 1), order="C") @ np.ones((1, k)) + (1 - onehot), axis=1)
    cp.Problem(cp.Minimize(lam * cp.sum_squares(W) + cp.sum(loss) / m)).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return np.asarray(W.value)


@pytest.mark.parametrize("lam", [1e-1, 1e-2, 1e-3, 1e-4])
def test_svm_certificate_against_cvxpy_and_sklearn(lam: float) -> None:
    from sklearn.svm import LinearSVC

    X, y = _noisy(120)
    k, m = 4, 120
    cert = multiclass_svm(X, y, k, lam)
    assert cert.dual <= cert.primal and cert.gap <= 1e-8
    assert _svm_objective(X, y, lam, cert.W) <= cert.primal + 1e-15
    f_cvx = _svm_objective(X, y, lam, _cvxpy_svm(X, y, k, lam))
    assert cert.dual <= f_cvx and abs(f_cvx - cert.primal) <= 1e-6
    svc = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=1 / (2 * lam * m), tol=1e-12, max_iter=200_000)
    svc.fit(X, y)
    f_svc = _svm_objective(X, y, lam, svc.coef_)
    assert cert.dual <= f_svc and abs(f_svc - cert.primal) <= 1e-6


def test_svm_fallback_solver_is_certified_too() -> None:
    X, y = _noisy(150, seed=1)
    direct = multiclass_svm(X, y, 4, 1e-3)
    fallback = multiclass_svm(X, y, 4, 1e-3, max_epochs=0)  # no coordinate ascent: Clarabel only
    assert fallback.dual <= fallback.primal and fallback.gap <= 1e-6
    assert max(direct.dual, fallback.dual) <= min(direct.primal, fallback.primal)
    with pytest.raises(ParamError, match=rf"^lam=0\.0: must be {re.escape(POSITIVE.words)}$"):
        multiclass_svm(X, y, 4, 0.0)


def test_svm_two_classes_matches_a_binary_symmetric_solution() -> None:
    """k = 2: the solution is antisymmetric (W_0 = -W_1), as the Crammer-Singer dual is symmetric."""
    X, y = _noisy(100, k=2, seed=2)
    cert = multiclass_svm(X, y, 2, 1e-2)
    assert cert.gap <= 1e-8 and np.allclose(cert.W[0], -cert.W[1], atol=1e-4)


def test_ball_comparator_brackets_the_optimum() -> None:
    import cvxpy as cp

    X, y = _noisy(150, seed=3)
    for B in (0.5, 5.0, 50.0):
        c = ball_comparator(X, y, 4, B)
        assert c.lower <= c.upper <= c.lower + 1e-6
        assert np.linalg.norm(c.U) <= B * (1 + 1e-15)
        assert abs(c.upper - float(np.mean(_ghinge_reference(X, y, c.U)))) <= 1e-12
        # independent value: the same problem written with cp.max
        U = cp.Variable((4, X.shape[1]))
        S = X @ U.T
        onehot = np.eye(4)[y]
        own = cp.sum(cp.multiply(S, onehot), axis=1)
        loss = cp.max(S - cp.reshape(own, (len(y), 1), order="C") @ np.ones((1, 4)) + (1 - onehot), axis=1)
        prob = cp.Problem(cp.Minimize(cp.sum(loss) / len(y)), [cp.norm(U, "fro") <= B])
        prob.solve(solver=cp.SCS, eps=1e-9)
        assert c.lower - 1e-6 <= prob.value <= c.upper + 1e-6
        # the lower end holds at random points of the ball, as weak duality says it must
        rng = np.random.default_rng(0)
        for _ in range(20):
            V = rng.standard_normal((4, X.shape[1]))
            assert c.lower <= float(np.mean(_ghinge_reference(X, y, V * (B / np.linalg.norm(V)))))


def test_ball_comparator_realisable_is_exactly_zero() -> None:
    ds = _gen(n=400, n_test=1000).generate(np.random.default_rng(4))
    for B in (1 / ds.gamma, 2 / ds.gamma):
        c = ball_comparator(ds.X, ds.y, ds.k, B)
        assert c.upper == 0.0 and c.lower <= 0.0 and c.lower > -1e-6
        assert np.all(ghinge_losses(ds.X, ds.y, c.U) == 0.0)
    # below 1/gamma the optimum can be positive: still bracketed
    c = ball_comparator(ds.X, ds.y, ds.k, 0.2 / ds.gamma)
    assert 0 < c.lower <= c.upper <= c.lower + 1e-6


# --- Interval estimates ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "n"), [(0, 10), (3, 10), (10, 10), (1, 1), (0, 1), (57, 100_000), (500, 1000)])
def test_clopper_pearson(x: int, n: int) -> None:
    for level in (0.9, 0.95, 0.99):
        a = 1 - level
        lo, hi = clopper_pearson(x, n, level)
        assert 0 <= lo <= x / n <= hi <= 1
        ref_lo = 0.0 if x == 0 else stats.beta.ppf(a / 2, x, n - x + 1)
        ref_hi = 1.0 if x == n else stats.beta.ppf(1 - a / 2, x + 1, n - x)
        assert abs(lo - ref_lo) <= 1e-12 and abs(hi - ref_hi) <= 1e-12
        # the defining tails: P(X >= x | lo) = a/2 and P(X <= x | hi) = a/2
        if x > 0:
            assert abs(stats.binom.sf(x - 1, n, lo) - a / 2) <= 1e-9
        if x < n:
            assert abs(stats.binom.cdf(x, n, hi) - a / 2) <= 1e-9


def test_clopper_pearson_bad_input() -> None:
    for args, pattern in (((11, 10), r"^errors=11"), ((1, 0), r"^n=0"), ((-1, 5), r"^errors=-1")):
        with pytest.raises(ParamError, match=pattern):
            clopper_pearson(*args)
    with pytest.raises(ParamError, match=r"^level=1\.0"):
        clopper_pearson(1, 5, 1.0)


def test_mean_ci() -> None:
    rng = np.random.default_rng(0)
    v = rng.random(40)
    mean, lo, hi = mean_ci(v)
    ref = stats.t.interval(0.95, 39, loc=v.mean(), scale=stats.sem(v))
    assert mean == pytest.approx(v.mean()) and lo == pytest.approx(ref[0]) and hi == pytest.approx(ref[1])
    _, lo2, hi2 = mean_ci(v, lo=0.0, hi=1.0)
    hoeffding = math.sqrt(math.log(2 / 0.05) / 80)
    assert hi2 - lo2 == pytest.approx(2 * max(hoeffding, (hi - lo) / 2)) and hi2 - lo2 >= hi - lo
    assert mean_ci([0.3])[1] == -math.inf and mean_ci([0.3], lo=0, hi=1)[1] > -math.inf
    with pytest.raises(UserError, match="outside the range"):
        mean_ci(v, lo=0.0, hi=0.5)
