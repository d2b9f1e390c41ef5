"""Kernelized Pegasos: with a linear kernel it is linear Pegasos (docs/bounds.md section 5), its Gram matrices are
the textbook kernels, Lemma 1 holds in every run, and a Gaussian kernel separates what a linear one cannot."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.bounds import bounds_for
from pipeline.data import MarginBinary, Shells
from pipeline.learners import KernelPegasos, Pegasos
from pipeline.learners.kernel_pegasos import KERNELS, gram_kernel
from pipeline.job.statistics import measure

REGRET = bounds_for("kernel_pegasos")[0]


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("sampling", ["iid", "perm", "inorder"])
def test_linear_kernel_is_linear_pegasos(batch: int, sampling: str) -> None:
    ds = MarginBinary(gamma=0.1, rho=1.0, n=200, d=6, flip=0.1).generate(np.random.default_rng(0))
    lam, T = 0.01, 3000
    lin = Pegasos(lam=lam, T=T, batch=batch, sampling=sampling)
    ker = KernelPegasos(lam=lam, T=T, batch=batch, sampling=sampling, kernel="linear")
    a = measure(lin, ds, np.random.default_rng(7))  # the same seed: the same index stream
    b = measure(ker, ds, np.random.default_rng(7))
    np.testing.assert_array_equal(a.trace["active"], b.trace["active"])
    w_kernel = (ker.alpha_ * ds.y) @ ds.X
    scale = max(1.0, np.abs(lin.w_).max())
    assert np.abs(lin.w_ - w_kernel).max() <= 1e-10 * scale
    assert np.abs(lin.w_bar_ - (ker.alpha_bar_ * ds.y) @ ds.X).max() <= 1e-10 * scale
    held_out = MarginBinary(gamma=0.1, rho=1.0, n=500, d=6).generate(np.random.default_rng(1)).X
    np.testing.assert_allclose(held_out @ lin.w_, held_out @ w_kernel, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(a.trace["loss"], b.trace["loss"], rtol=1e-10, atol=1e-12)
    assert a.quantities["suboptimality"] == pytest.approx(b.quantities["suboptimality"], abs=1e-8)


@pytest.mark.parametrize("lam", [0.01, 0.3])
@pytest.mark.parametrize("batch", [1, 3])
def test_projected_linear_kernel_is_projected_linear_pegasos(lam: float, batch: int) -> None:
    """The projection in the kernel's scale-and-coefficients form is linear Pegasos's projection: the same
    active steps, the same iterates up to rounding, on long rows (R = 3) where the ball binds early and often
    (the restart of the scale included: lam = 0.01 shrinks it past 2^-8)."""
    ds = MarginBinary(gamma=0.1, rho=3.0, n=150, d=5, flip=0.1).generate(np.random.default_rng(2))
    T = 4000
    lin = Pegasos(lam=lam, T=T, batch=batch, projection=True)
    ker = KernelPegasos(lam=lam, T=T, batch=batch, projection=True, kernel="linear")
    a = measure(lin, ds, np.random.default_rng(5))
    b = measure(ker, ds, np.random.default_rng(5))
    np.testing.assert_array_equal(a.trace["active"], b.trace["active"])
    scale = max(1.0, np.abs(lin.w_).max())
    assert np.abs(lin.w_ - (ker.alpha_ * ds.y) @ ds.X).max() <= 1e-9 * scale
    assert np.abs(lin.w_bar_ - (ker.alpha_bar_ * ds.y) @ ds.X).max() <= 1e-9 * scale
    assert np.linalg.norm((ker.alpha_ * ds.y) @ ds.X) <= (1 + 1e-12) / np.sqrt(lam)  # inside the ball
    np.testing.assert_allclose(a.trace["loss"], b.trace["loss"], rtol=1e-9, atol=1e-12)
    assert b.stats["c"] == pytest.approx((np.sqrt(lam) + b.stats["R"]) ** 2, rel=1e-14)
    assert a.quantities["suboptimality"] == pytest.approx(b.quantities["suboptimality"], abs=1e-8)


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_gram_matrices_are_the_textbook_kernels(kernel: str) -> None:
    from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

    X = np.random.default_rng(0).standard_normal((30, 4))
    learner = KernelPegasos(lam=0.1, kernel=kernel, degree=3, coef0=0.5, sigma=0.7)
    K = learner.gram(X)
    expected = {
        "linear": lambda: linear_kernel(X),
        "polynomial": lambda: polynomial_kernel(X, degree=3, gamma=1.0, coef0=0.5),
        "gaussian": lambda: rbf_kernel(X, gamma=1 / (2 * 0.7**2)),
    }[kernel]()
    np.testing.assert_allclose(K, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(K, gram_kernel.py(X, list(KERNELS).index(kernel), 3, 0.5, 0.7))
    assert np.sqrt(K.diagonal().max()) <= learner.radius(float(np.linalg.norm(X, axis=1).max()) * (1 + 1e-15))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(3, 50),
    lam=st.sampled_from([1e-3, 1e-2, 0.1, 1.0]),
    T=st.integers(1, 300),
    batch=st.integers(1, 3),
    sampling=st.sampled_from(["iid", "perm", "inorder"]),
    kernel=st.sampled_from(list(KERNELS)),
    rho=st.sampled_from([0.5, 1.0, 3.0]),
    projection=st.booleans(),
)
def test_lemma1_holds_for_every_kernel(seed, m, lam, T, batch, sampling, kernel, rho, projection) -> None:  # noqa: ANN001
    ds = Shells(rho=rho, n=m, d=3).generate(np.random.default_rng(seed))
    learner = KernelPegasos(lam=lam, T=T, batch=min(batch, m), sampling=sampling, kernel=kernel, sigma=0.5 * rho,
                            projection=projection)
    out = measure(learner, ds, np.random.default_rng(seed))
    stats = ds.stats.as_dict() | out.stats
    row = REGRET.evaluate(stats, out.quantities)
    assert row["holds"], row
    assert out.stats["dual_gap"] <= max(1e-9, 1e-3 * row["theoretical"])
    t, regret = out.curves["regret"]
    assert np.all(regret <= REGRET.curve_of(stats, t))


def test_gaussian_kernel_separates_shells_and_linear_cannot() -> None:
    ds = Shells(rho=1.0, n=400, d=3).generate(np.random.default_rng(0))
    assert not ds.stats.separable  # certified: no homogeneous linear separator
    errors = {}
    for kernel in ("gaussian", "linear"):
        learner = KernelPegasos(lam=1e-3, T=20_000, kernel=kernel, sigma=0.5)
        learner.run(ds, np.random.default_rng(1))
        K = learner.gram(ds.X)
        errors[kernel] = float(np.mean(np.sign(K @ (learner.alpha_bar_ * ds.y)) != ds.y))
    assert errors["gaussian"] <= 0.02 and errors["linear"] >= 0.3, errors


@pytest.mark.parametrize("radius", [0.0, 0.5])
def test_compiled_kernel_matches_reference(radius: float) -> None:
    from pipeline.learners.base import log_grid
    from pipeline.learners.kernel_pegasos import kernel_pegasos_kernel
    from pipeline.learners.pegasos import index_stream

    ds = Shells(rho=1.0, n=40, d=3).generate(np.random.default_rng(0))
    K = KernelPegasos(lam=0.1, kernel="gaussian").gram(ds.X)
    idx = index_stream("iid", ds.y, 200, 2, np.random.default_rng(0))
    grid = log_grid(200, 10)
    outs = []
    for fn in (kernel_pegasos_kernel, kernel_pegasos_kernel.py):
        arrays = [np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(40), np.zeros(40), np.zeros(40), np.empty(200),
                  np.empty(200, dtype=np.int32), np.empty((grid.size, 40))]
        fn(K, ds.y, idx, 0.1, radius, 0, grid, *arrays)
        outs.append(arrays)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("k", "radius"), [(1, 0.0), (2, 0.0), (1, 0.5), (3, 0.5)])
@pytest.mark.parametrize("cut", [1, 77])
def test_the_core_advanced_in_two_blocks_is_one_block_bit_for_bit(k: int, radius: float, cut: int) -> None:
    """KernelPegasosCore continues exactly: steps 1..cut then cut+1..T (the snapshots into the same array) give
    every byte of one advance over 1..T, with and without projection (radius 0.5 restarts the scale)."""
    from pipeline.learners.base import log_grid
    from pipeline.learners.kernel_pegasos import KernelPegasosCore, KernelPegasosSteps
    from pipeline.learners.pegasos import index_stream

    ds = Shells(rho=1.0, n=40, d=3).generate(np.random.default_rng(0))
    K = KernelPegasos(lam=0.1, kernel="gaussian").gram(ds.X)
    y = np.ascontiguousarray(ds.y, dtype=np.float64)
    T = 200
    idx = index_stream("iid", y, T, k, np.random.default_rng(3))
    grid = log_grid(T, 10)
    one = KernelPegasosCore.start(40, 0.1, radius)
    whole = one.advance(K, y, idx, grid)
    two = KernelPegasosCore.start(40, 0.1, radius)
    parts = KernelPegasosSteps.empty(T, grid.size, 40)
    two.advance(K, y, idx[:cut], grid, KernelPegasosSteps(parts.loss[:cut], parts.active[:cut], parts.avg))
    two.advance(K, y, idx[cut:], grid, KernelPegasosSteps(parts.loss[cut:], parts.active[cut:], parts.avg))
    assert one.t == two.t == T
    for name in ("loss", "active", "avg"):
        assert getattr(whole, name).tobytes() == getattr(parts, name).tobytes(), name
    for a, b in ((one.scalars, two.scalars), (one.beta, two.beta), (one.g, two.g), (one.z, two.z)):
        assert a.tobytes() == b.tobytes()
    assert one.alpha.tobytes() == two.alpha.tobytes()
