"""Certified comparators (docs/bounds.md sections 4-6): the SDCA duality-gap certificate checked against an
independent interior-point solver (cvxpy + Clarabel on the primal), against itself across storages
and kernels, and as a property over random small problems."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import sparse

from pipeline.params import ParamError
from pipeline.solvers.dual import Certificate, kernel_objective, kernel_sdca, objective, sdca


def noisy(m: int, d: int, seed: int, flip: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian points with ||x|| ~ 1, labels of a random direction with a fraction ``flip`` flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) / np.sqrt(d)
    y = np.where(X @ rng.normal(size=d) >= 0, 1.0, -1.0)
    return X, np.where(rng.random(m) < flip, -y, y)


def cvxpy_optimum(Z: np.ndarray, y: np.ndarray, lam: float, s: np.ndarray | None = None,
                  w_ref: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """F* of lam/2 ||w - w_ref||^2 + (1/m) sum_i s_i xi_i, xi_i >= 0, xi_i >= 1 - y_i <w, z_i>, by Clarabel."""
    import cvxpy as cp

    m, d = Z.shape
    s = np.ones(m) if s is None else s
    r = np.zeros(d) if w_ref is None else w_ref
    w, xi = cp.Variable(d), cp.Variable(m)
    problem = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(w - r) + (s @ xi) / m),
                         [xi >= 0, xi >= 1 - cp.multiply(y, Z @ w)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500)
    assert problem.status == cp.OPTIMAL
    return float(problem.value), np.asarray(w.value)


def features(K: np.ndarray) -> np.ndarray:
    """Phi with Phi Phi^T = K (eigendecomposition; negative rounding eigenvalues set to 0)."""
    mu, V = np.linalg.eigh(K)
    return V * np.sqrt(np.maximum(mu, 0.0))


def assert_agrees(cert: Certificate, optimum: float) -> None:
    assert cert.dual <= optimum + 1e-7
    assert cert.primal >= optimum - 1e-7
    assert abs(cert.primal - optimum) <= 1e-6
    assert cert.gap <= 1e-9 and cert.dual <= cert.primal


# --- Against an independent solver ----------------------------------------------------------------

PROBLEMS = [(120, 5, 1e-1), (150, 8, 1e-2), (200, 10, 1e-3)]


@pytest.mark.parametrize(("m", "d", "lam"), PROBLEMS)
def test_plain_matches_cvxpy(m: int, d: int, lam: float) -> None:
    X, y = noisy(m, d, seed=m)
    cert = sdca(X, y, lam)
    optimum, w_cvx = cvxpy_optimum(X, y, lam)
    assert_agrees(cert, optimum)
    assert cert.dual <= objective(X, y, lam, w_cvx)  # weak duality against the other solver's point


@pytest.mark.parametrize(("m", "d", "lam"), PROBLEMS)
def test_weighted_matches_cvxpy(m: int, d: int, lam: float) -> None:
    """The imbalanced objective of section 6: s_j = N / (2 N_{y_j}) on a 1:4 sample."""
    X, _ = noisy(m, d, seed=m + 1)
    rng = np.random.default_rng(m)
    score = X @ rng.normal(size=d)
    y = np.where(score > np.quantile(score, 0.8), 1.0, -1.0)
    y = np.where(rng.random(m) < 0.1, -y, y)
    s = m / (2.0 * np.where(y > 0, (y > 0).sum(), (y < 0).sum()))
    cert = sdca(X, y, lam, weights=s)
    assert np.all((cert.alpha >= 0) & (cert.alpha <= s))
    assert_agrees(cert, cvxpy_optimum(X, y, lam, s=s)[0])


@pytest.mark.parametrize(("m", "d", "lam"), PROBLEMS)
def test_transfer_matches_cvxpy(m: int, d: int, lam: float) -> None:
    X, y = noisy(m, d, seed=m + 2)
    w_ref = np.random.default_rng(m).normal(size=d)
    cert = sdca(X, y, lam, w_ref=w_ref)
    assert_agrees(cert, cvxpy_optimum(X, y, lam, w_ref=w_ref)[0])
    assert cert.primal >= objective(X, y, lam, cert.w, w_ref=w_ref)


def gram(kind: str, X: np.ndarray) -> np.ndarray:
    if kind == "linear":
        return X @ X.T
    if kind == "polynomial":
        return (1.0 + X @ X.T) ** 3
    sq = np.einsum("ij,ij->i", X, X)
    return np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0))


@pytest.mark.parametrize("kind", ["linear", "polynomial", "gaussian"])
@pytest.mark.parametrize("lam", [1e-1, 1e-3])
def test_kernel_matches_cvxpy(kind: str, lam: float) -> None:
    X, y = noisy(150, 4, seed=7)
    K = gram(kind, X)
    s = np.where(y > 0, 0.8, 1.25)
    cert = kernel_sdca(K, y, lam, weights=s)
    assert_agrees(cert, cvxpy_optimum(features(K), y, lam, s=s)[0])
    assert cert.primal >= kernel_objective(K, y, lam, cert.w, weights=s)


def test_kernel_with_linear_gram_equals_linear() -> None:
    X, y = noisy(300, 10, seed=3)
    for lam in (1e-1, 1e-2, 1e-3):
        lin, ker = sdca(X, y, lam), kernel_sdca(X @ X.T, y, lam)
        assert abs(lin.primal - ker.primal) <= 1e-8 and abs(lin.dual - ker.dual) <= 1e-8
        w = X.T @ (ker.w * y)  # w = sum_i a_i y_i x_i
        assert abs(objective(X, y, lam, w) - lin.primal) <= 1e-8


# --- The kernels and storages ---------------------------------------------------------------------


def test_compiled_kernels_equal_their_python_reference() -> None:
    from pipeline.solvers import dual

    X, y = noisy(40, 6, seed=5)
    X[3] = 0.0
    m, d, lm = 40, 6, 1e-2 * 40
    b = 1.0 - y * (X @ np.full(d, 0.1))
    s, sqn = np.full(m, 1.5), np.einsum("ij,ij->i", X, X)
    runs = []
    for f in (dual._dense_epochs, dual._dense_epochs.py):
        alpha, v = np.zeros(m), np.zeros(d)
        rng = np.random.default_rng(0)
        runs.append((f(X, y, b, s, sqn, lm, alpha, v, rng, 5), alpha, v, rng.random()))
    assert runs[0][0] == runs[1][0] and runs[0][0][0] == 5  # epochs made: all five (each changed something)
    assert runs[0][3] == runs[1][3]  # the same draws taken from the generator: (m - 1) a shuffle
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    np.testing.assert_array_equal(runs[0][2], runs[1][2])
    K = X @ X.T
    runs = []
    for f in (dual._gram_epochs, dual._gram_epochs.py):
        alpha, g = np.zeros(m), np.zeros(m)
        runs.append((f(K, y, s, lm, alpha, g, np.random.default_rng(0), 5), alpha))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    for f in (dual._dense_combination, dual._gram_products):
        args = (X, y, runs[0][1], lm) if f is dual._dense_combination else (K, runs[0][1] * y)
        shape = d if f is dual._dense_combination else m
        out_c, out_py = (np.empty(shape), np.empty(shape)), (np.empty(shape), np.empty(shape))
        f(*args, *out_c)
        f.py(*args, *out_py)
        np.testing.assert_array_equal(out_c, out_py)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 12), st.floats(-6.0, 1.0), st.booleans(), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_the_compiled_evaluation_is_the_same_bits_as_its_steps(m: int, d: int, log_lam: float, weighted: bool,
                                                               transfer: bool, seed: int) -> None:
    """Dense rows are evaluated by one compiled call (:func:`_dense_ends`): both ends, their error bounds, w and v
    are the same bits as the evaluation a kernel call a step (which CSR rows take), at dual points with
    coordinates at 0, inside the box and at its upper ends, zero rows included."""
    from pipeline.solvers import dual

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) * (rng.random((m, d)) < 0.8)
    X[rng.random(m) < 0.1] = 0.0
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    s = rng.uniform(0.5, 3.0, m) if weighted else np.ones(m)
    r = rng.normal(size=d) if transfer else np.zeros(d)
    problem = dual._Linear(dual._Dense(X), y, 10.0**log_lam, s, r)
    alpha = np.where(rng.random(m) < 0.3, 0.0, np.where(rng.random(m) < 0.4, s, rng.random(m) * s))
    one, steps = problem.evaluate(alpha), problem.evaluate_in_steps(alpha)
    assert one[1] == steps[1] and one[2] == steps[2]
    np.testing.assert_array_equal(one[0], steps[0])
    np.testing.assert_array_equal(one[3], steps[3])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_the_compiled_polish_ascends_as_its_reference(n: int, rank: int, seed: int) -> None:
    """The active-set polish, compiled, stays in the box, never lowers q(a) = rhs.a - a.G.a/2, and agrees with its
    Python reference (numpy's LAPACK) to rounding, on positive semi-definite G of any rank (duplicates make
    null spaces, where a step runs to a bound), and ends stationary on the coordinates it leaves inside the box."""
    from pipeline.solvers import dual

    rng = np.random.default_rng(seed)
    B = rng.normal(size=(n, min(rank, n)))
    G = B @ B.T
    rhs, s = rng.normal(size=n) * 2.0, rng.uniform(0.5, 2.0, n)
    a0 = rng.random(n) * s

    def q(a: np.ndarray) -> float:
        return float(rhs @ a - a @ G @ a / 2.0)

    got, ref = dual._polish(G, rhs, a0, s, 20), dual._polish.py(G, rhs, a0, s, 20)
    assert np.all(got >= 0.0) and np.all(got <= s)
    assert q(got) >= q(a0) - 1e-12 * (1.0 + abs(q(a0)))
    assert abs(q(got) - q(ref)) <= 1e-9 * (1.0 + abs(q(ref)))
    # n + 1 steps at most (each but the last puts a coordinate on a bound), the last a completed Newton step:
    # q is stationary on the coordinates left inside the box (a point of a null space would be no maximiser)
    inside = (got > 0.0) & (got < s)
    scale = np.abs(rhs).max() + np.abs(G).max() * s.max()
    assert np.all(np.abs((rhs - G @ got)[inside]) <= 1e-8 * scale)


def test_the_ascent_stops_at_a_fixed_point_of_its_steps() -> None:
    """An epoch that changes no coordinate ends the epochs (v is unchanged, so every later epoch would change
    none); one that does so from the freshly evaluated point ends the ascent, whatever the tolerance: more epochs
    could never move it. Before, the ascent ran its 42-epoch blocks and, at tol = 0, all of max_epochs."""
    from pipeline.solvers import dual

    X, y = noisy(200, 5, seed=3)
    m, lam = 200, 1.0 / (0.01 * 200)  # C = 0.01: every alpha_i reaches its upper end in the first epoch
    cert = sdca(X, y, lam, tol=1e-7)
    assert cert.epochs == 2 and np.all(cert.alpha == 1.0) and cert.gap <= 1e-7
    stuck = sdca(X, y, lam, tol=0.0, max_epochs=100_000)
    assert stuck.epochs < 100 and stuck.gap > 0.0
    np.testing.assert_array_equal(stuck.alpha, cert.alpha)
    v, _ = dual._Dense(X).combination(y, stuck.alpha.copy(), lam * m)
    alpha = stuck.alpha.copy()
    made = dual._dense_epochs(X, y, np.ones(m), np.ones(m), np.einsum("ij,ij->i", X, X), lam * m, alpha, v,
                              np.random.default_rng(1), 7)
    assert made == (1, 0)
    np.testing.assert_array_equal(alpha, stuck.alpha)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 80), st.integers(1, 8), st.floats(-6.0, 0.0), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from([0.0, 1e-9, 1e-5]), st.integers(0, 300), st.integers(0, 2**32 - 1))
def test_the_compiled_ascent_decides_as_the_python_loop(m: int, d: int, log_lam: float, weighted: bool,
                                                        transfer: bool, warm: bool, tol: float, max_epochs: int,
                                                        seed: int) -> None:
    """Dense rows take the compiled loop (``_dense_ascent``), CSR rows the Python one: on the same sample, with
    weights, a transfer reference, a warm start, any tolerance (0 included) and epoch budget, both return the same
    certificate, bit for bit: the same evaluations, polishes, epochs and draws."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) * (rng.random((m, d)) < 0.7)
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=m) >= 0, 1.0, -1.0)
    kwargs = {"weights": rng.uniform(0.5, 2.0, m) if weighted else None, "w_ref": rng.normal(size=d) if transfer else None,
              "alpha0": rng.random(m) if warm else None, "tol": tol, "max_epochs": max_epochs, "seed": seed % 7}
    dense, csr = sdca(X, y, 10.0**log_lam, **kwargs), sdca(sparse.csr_matrix(X), y, 10.0**log_lam, **kwargs)
    np.testing.assert_array_equal(dense.w, csr.w)
    np.testing.assert_array_equal(dense.alpha, csr.alpha)
    assert (dense.primal, dense.dual, dense.gap, dense.epochs) == (csr.primal, csr.dual, csr.gap, csr.epochs)


def test_a_path_of_lams_gives_the_certificates_of_warm_started_calls() -> None:
    """``sdca_path`` reads the sample once and solves each lam from the last one's dual point: every certificate
    is the one of the corresponding ``sdca(..., alpha0=previous.alpha)``, bit for bit, dense and CSR alike."""
    from pipeline.solvers.dual import sdca_path

    X, y = noisy(150, 6, seed=7)
    lams = [1.0 / (c * 150) for c in (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)]
    for A in (X, sparse.csr_matrix(X)):
        path, alpha = sdca_path(A, y, lams, tol=1e-7, max_epochs=20_000), None
        for lam, got in zip(lams, path):
            want = sdca(A, y, lam, tol=1e-7, max_epochs=20_000, alpha0=alpha)
            alpha = want.alpha
            np.testing.assert_array_equal(got.w, want.w)
            np.testing.assert_array_equal(got.alpha, want.alpha)
            assert (got.primal, got.dual, got.gap, got.epochs) == (want.primal, want.dual, want.gap, want.epochs)


def test_sparse_input_gives_the_same_certificate() -> None:
    X, y = noisy(300, 30, seed=11)
    X[np.abs(X) < 0.15] = 0.0  # about 40 % zeros
    X[7] = 0.0
    w_ref = np.linspace(-0.5, 0.5, 30)
    for lam in (1e-1, 1e-3):
        dense = sdca(X, y, lam, w_ref=w_ref)
        csr = sdca(sparse.csr_matrix(X), y, lam, w_ref=w_ref)
        np.testing.assert_array_equal(dense.alpha, csr.alpha)
        np.testing.assert_array_equal(dense.w, csr.w)
        assert (dense.primal, dense.dual, dense.epochs) == (csr.primal, csr.dual, csr.epochs)
        csr_value = objective(sparse.csr_matrix(X), y, lam, dense.w, w_ref=w_ref)
        assert objective(X, y, lam, dense.w, w_ref=w_ref) == csr_value


def _mostly_zeros(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    m, d = int(rng.integers(20, 300)), int(rng.integers(2, 60))
    X = rng.normal(size=(m, d)) * (rng.random((m, d)) < rng.uniform(0.05, 0.6))
    y = np.where(X @ rng.normal(size=d) + 0.2 * rng.normal(size=m) >= 0, 1.0, -1.0)
    return X, y, 10 ** rng.uniform(-6, -1)


@pytest.mark.parametrize("seed", [29, 32, 53, 67, 71, 85])
def test_dense_and_csr_take_the_same_steps_whatever_the_zeros(seed: int) -> None:
    """The schedule (when to evaluate, when to polish) reads the sample's size as non-zero entries, however
    stored: when it read stored entries, these samples (5-60 % non-zero) got other certificates from dense
    and from CSR input (10 of the first 200 seeds). A CSR matrix storing its zeros takes the same steps too."""
    X, y, lam = _mostly_zeros(seed)
    m, d = X.shape
    stored_zeros = sparse.csr_matrix((X.ravel(), np.tile(np.arange(d), m), np.arange(0, m * d + 1, d)), shape=(m, d))
    certs = [sdca(A, y, lam) for A in (X, sparse.csr_matrix(X), stored_zeros)]
    assert stored_zeros.nnz == X.size > np.count_nonzero(X)
    for other in certs[1:]:
        np.testing.assert_array_equal(certs[0].w, other.w)
        assert (certs[0].primal, certs[0].dual, certs[0].epochs) == (other.primal, other.dual, other.epochs)


def test_deterministic_per_seed_and_inputs_untouched() -> None:
    X, y = noisy(200, 5, seed=2)
    X0, y0 = X.copy(), y.copy()
    a, b = sdca(X, y, 1e-3, seed=4), sdca(X, y, 1e-3, seed=4)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert (a.primal, a.dual, a.epochs) == (b.primal, b.dual, b.epochs)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


# --- Edge cases -----------------------------------------------------------------------------------


@pytest.mark.parametrize("lam", [1.0, 10.0, 1e3])
def test_large_lambda(lam: float) -> None:
    X, y = noisy(300, 5, seed=1)
    cert = sdca(X, y, lam)
    assert cert.gap <= 1e-9 and cert.dual <= cert.primal


def test_duplicates_and_zero_rows() -> None:
    X, y = noisy(100, 4, seed=9)
    X = np.vstack([X, X[:20], X[:5], np.zeros((3, 4))])  # duplicates, some with both labels
    y = np.concatenate([y, y[:20], -y[:5], [1.0, -1.0, 1.0]])
    for lam in (1e-1, 1e-3):
        cert = sdca(X, y, lam)
        assert cert.gap <= 1e-9
        np.testing.assert_array_equal(cert.alpha[-3:], 1.0)  # a zero row's loss is the constant 1
        assert_agrees(cert, cvxpy_optimum(X, y, lam)[0])
        ker = kernel_sdca(X @ X.T, y, lam)
        assert ker.gap <= 1e-9 and abs(ker.primal - cert.primal) <= 1e-8


def test_unfinished_run_returns_its_certificate() -> None:
    X, y = noisy(500, 10, seed=4)
    cert = sdca(X, y, 1e-4, max_epochs=1)
    assert cert.epochs == 1 and cert.gap > 1e-9 and cert.dual <= cert.primal
    start = sdca(X, y, 1e-2, max_epochs=0)
    assert start.epochs == 0 and start.dual == 0.0 and start.primal >= 1.0  # alpha = 0, w = 0


def test_invalid_parameters_name_themselves() -> None:
    X, y = noisy(10, 2, seed=0)
    for kwargs, name in [({"lam": 0.0}, "lam"), ({"lam": 1.0, "weights": -np.ones(10)}, "weights"),
                         ({"lam": 1.0, "w_ref": np.ones(3)}, "w_ref"), ({"lam": 1.0, "tol": -1.0}, "tol")]:
        with pytest.raises(ParamError, match=name):
            sdca(X, y, **kwargs)
    with pytest.raises(ParamError, match="y"):
        sdca(X, np.zeros(10), 1.0)
    with pytest.raises(ParamError, match="K"):
        kernel_sdca(np.triu(np.ones((10, 10))), y, 1.0)


# --- Property: the certificate holds on any small problem -----------------------------------------


@st.composite
def problems(draw: st.DrawFn) -> dict:
    m = draw(st.integers(1, 12))
    d = draw(st.integers(1, 4))
    values = st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.0, 0.25, 1.0, 3.0])
    X = np.array(draw(st.lists(st.lists(values, min_size=d, max_size=d), min_size=m, max_size=m)))
    extra = draw(st.integers(0, 3))  # duplicated rows, possibly with the other label
    picks = draw(st.lists(st.integers(0, m - 1), min_size=extra, max_size=extra))
    X = np.vstack([X, X[picks]]) if picks else X
    y = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=len(X), max_size=len(X))))
    weights = draw(st.none() | st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=len(X), max_size=len(X)))
    w_ref = draw(st.none() | st.lists(values, min_size=d, max_size=d))
    lam = draw(st.sampled_from([1e-3, 1e-2, 0.1, 1.0, 10.0]))
    return {"X": X, "y": y, "lam": lam, "weights": None if weights is None else np.array(weights),
            "w_ref": None if w_ref is None else np.array(w_ref)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(0, 3))
def test_certificate_property(p: dict, seed: int) -> None:
    X, y, lam, weights, w_ref = p["X"], p["y"], p["lam"], p["weights"], p["w_ref"]
    s = np.ones(len(y)) if weights is None else weights
    cert = sdca(X, y, lam, weights=weights, w_ref=w_ref, seed=seed)
    assert np.all((cert.alpha >= 0) & (cert.alpha <= s))
    assert cert.dual <= cert.primal and cert.gap == cert.primal - cert.dual
    assert cert.primal >= objective(X, y, lam, cert.w, weights=weights, w_ref=w_ref)
    assert cert.gap <= 1e-9  # converged within max_epochs on every small problem
    # the dual end is D(alpha) of the returned alpha, recomputed independently (numpy, any order)
    r = np.zeros(X.shape[1]) if w_ref is None else w_ref
    m = len(y)
    v = X.T @ (cert.alpha * y) / (lam * m)
    dual = cert.alpha @ (1.0 - y * (X @ r)) / m - lam / 2 * v @ v
    assert cert.dual <= dual + 1e-12 and dual - cert.dual <= 1e-10
    # weak duality against arbitrary primal points
    rng = np.random.default_rng(seed)
    for w in (np.zeros(X.shape[1]), r, rng.normal(size=X.shape[1]), cert.w + 0.01 * rng.normal(size=X.shape[1])):
        assert cert.dual <= objective(X, y, lam, w, weights=weights, w_ref=w_ref) + 1e-12


@pytest.mark.parametrize("kind", ["linear", "sparse", "kernel"])
def test_objectives_at_many_points_are_each_points_objective_bit_for_bit(kind: str) -> None:
    """The statistics evaluate the objective at every snapshot of a run (dozens a run) in one call: each value must be
    the bits a problem read afresh for that point gives (the one-point functions of the same sums)."""
    import scipy.sparse

    from pipeline.solvers.dual import _Kernel, _Linear, _labels, _lam, _rows, _vector, _weights, kernel_objectives, \
        objectives, symmetric_gram

    rng = np.random.default_rng(7)
    m, d = 300, 7
    X = rng.standard_normal((m, d))
    y = rng.choice([-1.0, 1.0], m)
    weights, w_ref = rng.uniform(0.2, 2.0, m), rng.standard_normal(d)
    if kind == "kernel":
        K, points = X @ X.T, rng.uniform(0.0, 0.1, (9, m))
        got = kernel_objectives(K, y, 0.05, points, weights=weights)
        want = [_Kernel(symmetric_gram(K, m), _labels(y, m), _lam(0.05), _weights(weights, m)).primal(_vector("a", a, m))[0]
                for a in points]
    else:
        data = scipy.sparse.csr_matrix(X * (rng.random((m, d)) < 0.4)) if kind == "sparse" else X
        points = rng.standard_normal((9, d))
        got = objectives(data, y, 0.05, points, weights=weights, w_ref=w_ref)
        want = [_Linear(_rows(data), _labels(y, m), _lam(0.05), _weights(weights, m), _vector("w_ref", w_ref, d)).primal(
            _vector("w", w, d))[0] for w in points]
    assert got.dtype == np.float64 and got.tolist() == want
    with pytest.raises(ParamError):
        (kernel_objectives(K, y, 0.05, [np.full(m, np.nan)]) if kind == "kernel"
         else objectives(data, y, 0.05, [np.full(d, np.inf)]))
