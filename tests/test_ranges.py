"""The ranges the theory gives the (E) and (P) quantities (pipeline/bounds/ranges.py; docs/bounds.md, "Ranges
from the theory"), tried as a referee would: every measured value of every iterate inside its range on crafted
data at extreme lam, T and R, each top's norm invariant checked against the run's own iterates, and the tops
reached within a small factor where a construction pushes the iterate there (a range far above what any run can
reach would cost seeds without being wrong; one below it would be a bug, and fails the run)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.bounds import bounds_for
from pipeline.bounds.base import RangeError
from pipeline.bounds.ranges import SLACK, pegasos_ball, rlm_norm, sgd_growth, sgd_norm
from pipeline.data import Dataset, MarginBinary, MulticlassMargin
from pipeline.data.certify import certify_sample
from pipeline.learners import KernelPegasos, MulticlassPegasos, MulticlassSGD, MulticlassSVM, Pegasos
from pipeline.job.statistics import measure

SUBOPTIMALITIES = ("suboptimality", "suboptimality_random", "suboptimality_last")


def _crafted(kind: str, m: int, d: int, scale: float, seed: int) -> Dataset:
    """Samples that push Pegasos' iterates far: opposite points with one label (every step moves the iterate
    against half the sample), one point repeated, random points, all at radius ``scale``."""
    rng = np.random.default_rng(seed)
    if kind == "opposite":
        x = rng.standard_normal(d)
        x *= scale / np.linalg.norm(x)
        X = np.array([x if i % 2 == 0 else -x for i in range(max(m, 2))])
        y = np.ones(X.shape[0])
        y[-1] = -1.0  # two classes (the balanced objective needs both)
    elif kind == "repeated":
        x = rng.standard_normal(d)
        X = np.tile(x * scale / np.linalg.norm(x), (max(m, 2), 1))
        y = np.where(np.arange(X.shape[0]) % 3 == 0, -1.0, 1.0)
    else:
        X = rng.standard_normal((max(m, 2), d))
        X *= scale / np.linalg.norm(X, axis=1).max()
        y = np.where(rng.random(X.shape[0]) < 0.5, 1.0, -1.0)
        y[0], y[-1] = 1.0, -1.0
    X = np.ascontiguousarray(X)
    return Dataset("crafted", X, y, certify_sample(X, y), directions={"w*": np.eye(d)[0]})


def _assert_inside(learner, ds, seed: int) -> dict:  # noqa: ANN001
    out = measure(learner, ds, np.random.default_rng(seed))
    stats = ds.stats.as_dict() | out.stats
    lo, hi = pegasos_ball(stats)
    assert lo == 0.0 and math.isfinite(hi)
    for q in SUBOPTIMALITIES:
        if q in out.quantities:
            assert out.quantities[q] <= hi, (q, out.quantities[q], hi)
    expectation = next(b for b in bounds_for(learner.name) if b.name.endswith("expectation"))
    row = expectation.evaluate(stats, out.quantities, out.steps)  # raises RangeError outside the range
    assert row["range_source"] == "pegasos_ball" and row["range_hi"] == hi
    return stats | out.quantities


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["opposite", "repeated", "random"]), m=st.integers(2, 12), d=st.integers(1, 4),
       log_scale=st.floats(-2, 2), log_lam=st.floats(-4, 1), T=st.integers(1, 400), projection=st.booleans(),
       batch=st.integers(1, 4), objective=st.sampled_from(["hinge", "balanced", "transfer"]),
       sampling=st.sampled_from(["iid", "perm", "class_balanced"]), seed=st.integers(0, 2**16))
def test_no_pegasos_measurement_leaves_its_range(kind, m, d, log_scale, log_lam, T, projection, batch,  # noqa: ANN001
                                                 objective, sampling, seed) -> None:  # noqa: ANN001
    if sampling == "class_balanced" and objective != "balanced" or objective == "balanced" and sampling == "perm":
        sampling = "iid"
    ds = _crafted(kind, m, d, 10.0**log_scale, seed)
    learner = Pegasos(lam=10.0**log_lam, T=T, batch=min(batch, ds.X.shape[0]), projection=projection,
                      objective=objective, sampling=sampling)
    _assert_inside(learner, ds, seed)


@pytest.mark.parametrize("kernel", ["linear", "gaussian", "polynomial"])
@pytest.mark.parametrize("projection", [False, True])
@pytest.mark.parametrize("lam", [1e-3, 0.1, 3.0])
def test_no_kernel_pegasos_measurement_leaves_its_range(kernel: str, projection: bool, lam: float) -> None:
    for kind in ("opposite", "random"):
        ds = _crafted(kind, 10, 3, 2.0, 7)
        _assert_inside(KernelPegasos(lam=lam, T=300, kernel=kernel, projection=projection, sigma=0.5), ds, 3)


@pytest.mark.parametrize("cost", ["zero_one", "ordinal", "absolute"])
@pytest.mark.parametrize("projection", [False, True])
@pytest.mark.parametrize("lam", [1e-3, 0.1, 2.0])
def test_no_multiclass_pegasos_measurement_leaves_its_range(cost: str, projection: bool, lam: float) -> None:
    ds = MulticlassMargin(gamma=0.05, rho=3.0, k=4, d=3, n=40, n_test=1000, noise=0.3).generate(np.random.default_rng(5))
    _assert_inside(MulticlassPegasos(lam=lam, T=400, cost=cost, projection=projection), ds, 11)


def test_the_pegasos_top_is_attained() -> None:
    """Two opposite points of one label at radius R: after one step the last iterate sits at y x / lam, a vertex
    of the steps' hull and the far end of the ball of radius R / lam, where f = 1/2 + R^2 / lam. The hull's top
    is attained there (to its rounding allowance), for every lam; the ball's alone (1 + 3 R^2 / (2 lam) - f*_lo)
    is within a factor 1.5 of it."""
    for lam in (1e-3, 0.1, 1.0):
        x = np.array([[3.0, 0.0], [-3.0, 0.0]])
        y = np.array([1.0, 1.0])
        ds = Dataset("two", x, y, certify_sample(x, y))
        values = _assert_inside(Pegasos(lam=lam, T=1), ds, 0)
        hi = pegasos_ball(values)[1]
        assert values["suboptimality_last"] >= hi * (1.0 - 2.0 * SLACK), (lam, values["suboptimality_last"], hi)
        ball = pegasos_ball(values | {"hull_top": math.nan})[1]
        assert hi <= ball <= 1.6 * values["suboptimality_last"], (lam, hi, ball)


def test_the_hull_is_searched_up_to_its_size_limit() -> None:
    """Above HULL_MAX examples the hull is not searched (its work is m^2 d): the ball's top stands alone."""
    from pipeline.job.statistics import HULL_MAX

    ds = MarginBinary(gamma=0.1, rho=1.0, n=HULL_MAX + 1, d=3).generate(np.random.default_rng(0))
    out = measure(Pegasos(lam=0.1, T=50), ds, np.random.default_rng(0))
    assert math.isnan(out.stats["hull_top"]) and math.isfinite(pegasos_ball(ds.stats.as_dict() | out.stats)[1])


def test_a_range_below_a_measurement_fails_the_run() -> None:
    """The check is live: the same run judged against a top shrunk below its measurement fails, naming the range."""
    ds = _crafted("opposite", 2, 2, 3.0, 0)
    learner = Pegasos(lam=0.01, T=1)
    out = measure(learner, ds, np.random.default_rng(0))
    stats = ds.stats.as_dict() | out.stats
    expectation = next(b for b in bounds_for("pegasos") if b.name == "expectation")
    from dataclasses import replace

    from pipeline.bounds.ranges import Range

    low = Range("too_low", pegasos_ball.requires, lambda s: (0.0, out.quantities["suboptimality"] / 2))
    with pytest.raises(RangeError, match="outside the range"):
        replace(expectation, range=low).evaluate(stats, out.quantities, out.steps)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(T=st.integers(1, 3000), log_B=st.floats(-1, 2), rho=st.floats(0.1, 10), k=st.integers(2, 5),
       cost=st.sampled_from(["zero_one", "ordinal", "absolute"]), noise=st.sampled_from([0.0, 0.5]),
       seed=st.integers(0, 2**16))
def test_multiclass_sgd_norm_and_excess_stay_in_range(T, log_B, rho, k, cost, noise, seed) -> None:  # noqa: ANN001
    """||W_bar|| <= sgd_norm at every snapshot (the induction's invariant, on the run's own averages) and the
    excess inside [-max Delta, top]: on noisy labels (many updates) and at step sizes from tiny to huge."""
    ds = MulticlassMargin(gamma=0.02 * rho, rho=rho, k=k, d=3, n=10, n_test=1000,
                          noise=noise).generate(np.random.default_rng(seed))
    learner = MulticlassSGD(B=10.0**log_B, T=T, cost=cost)
    out = measure(learner, ds, np.random.default_rng(seed + 1))
    stats = ds.stats.as_dict() | out.stats
    top_norm = sgd_norm(stats)
    norms = np.sqrt((out.run.avg ** 2).sum(axis=(1, 2)))
    assert np.all(norms <= top_norm), (norms.max(), top_norm)
    lo, hi = sgd_growth(stats)
    # the upper estimate inside the range; the lower one (a confidence limit minus the comparator's upper limit)
    # may fall below lo, where the verdict clips it, but never above hi
    assert lo <= out.quantities["excess"] <= hi and out.quantities["excess_upper_comparator"] <= hi
    cor = next(b for b in bounds_for("multiclass_sgd") if b.name == "cor17_2")
    assert cor.evaluate(stats, out.quantities, out.steps)["range_source"] == "sgd_growth"


def test_the_sgd_norm_invariant_is_within_a_small_factor_of_a_run() -> None:
    """At B = 1 (a step size where the cross term 2 eta max Delta dominates) the run's largest average norm is
    within a factor 5 of the invariant's (measured 0.33 of it): the top is not orders of magnitude loose."""
    ds = MulticlassMargin(gamma=0.05, rho=1.0, k=2, d=2, n=10, n_test=1000, noise=0.0).generate(np.random.default_rng(0))
    out = measure(MulticlassSGD(B=1.0, T=2000), ds, np.random.default_rng(0))
    stats = ds.stats.as_dict() | out.stats
    norms = np.sqrt((out.run.avg ** 2).sum(axis=(1, 2)))
    assert sgd_norm(stats) / 5 <= norms.max() <= sgd_norm(stats)


@pytest.mark.parametrize("cost", ["zero_one", "absolute"])
@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_multiclass_svm_norm_and_excess_stay_in_range(cost: str, noise: float) -> None:
    ds = MulticlassMargin(gamma=0.05, rho=2.0, k=4, d=3, n=60, n_test=1000, noise=noise).generate(np.random.default_rng(2))
    learner = MulticlassSVM(B=5.0, cost=cost)
    out = measure(learner, ds, np.random.default_rng(0))
    stats = ds.stats.as_dict() | out.stats
    assert float(np.sqrt((out.run.W ** 2).sum())) <= math.sqrt((stats["cost_max"] + 1e-6) / stats["lam_uml"])
    lo, hi = rlm_norm(stats)
    assert math.isfinite(hi) and lo <= out.quantities["excess"] <= hi
    assert rlm_norm(stats | {"dual_gap": 1.0}) == (lo, math.inf)  # an uncertified solve: no top is declared


def test_the_slack_is_tiny_against_the_tops() -> None:
    assert SLACK < 1e-6


def _hull_top_as_written(run) -> float:  # noqa: ANN001
    """The hull's top computed as its docstring writes it, one temporary per operation (the code before it was
    made to work in place): the reference the in-place code must equal bit for bit."""
    from pipeline.job import statistics
    from pipeline.numerics import UNIT_ROUNDOFF

    X, K, y, lam = run.X, run.K, run.y, run.lam
    m = y.shape[0]
    w = np.ones(m) if run.weights is None else run.weights
    step, ref = run.s_step, run.ref_margin
    if X is not None:
        diag = np.einsum("ij,ij->i", X, X)
        err = (X.shape[1] + 2) * 2.0 * UNIT_ROUNDOFF * float(diag.max())
    else:
        diag, err = np.diagonal(K).astype(np.float64), 0.0
    best = -math.inf
    for a in range(0, m, statistics._HULL_BLOCK):
        b = min(a + statistics._HULL_BLOCK, m)
        cols = X @ X[a:b].T if X is not None else np.asarray(K[:, a:b], dtype=np.float64)
        scale = step[a:b] * y[a:b] / lam
        hinge = np.maximum(0.0, 1.0 - ref[:, None] - y[:, None] * cols * scale[None, :]
                           + (err * np.abs(step[a:b]) / lam)[None, :])
        f = (step[a:b] ** 2) * (diag[a:b] + err) / (2.0 * lam) + (w @ hinge) / m
        best = max(best, float(f.max()))
    return best * (1.0 + (m + 16) * 4.0 * UNIT_ROUNDOFF) if math.isfinite(best) else math.nan


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 1100), d=st.integers(1, 25), scale=st.sampled_from([1e-3, 1.0, 30.0]),
       lam=st.floats(1e-4, 1.0), kernel=st.booleans(), weighted=st.booleans(), stepped=st.booleans(),
       transfer=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_the_hull_top_is_its_formula_bit_for_bit(m: int, d: int, scale: float, lam: float, kernel: bool, weighted: bool,
                                                 stepped: bool, transfer: bool, seed: int) -> None:
    """hull_top works in place on the Gram's blocks (2x faster: no (m, block) temporary per operation); every
    operation keeps its order, so the value is the formula's to the last bit, over block boundaries (m > 512),
    weights, step sizes, a transfer reference and a kernel's Gram."""
    from types import SimpleNamespace

    from pipeline.job.statistics import hull_top

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d)) * scale
    run = SimpleNamespace(X=None if kernel else X, K=X @ X.T if kernel else None, y=rng.choice([-1.0, 1.0], m), lam=lam,
                          weights=rng.uniform(0.0, 3.0, m) if weighted else None,
                          s_step=rng.uniform(0.0, 2.0, m) if stepped else np.ones(m),
                          ref_margin=rng.standard_normal(m) if transfer else np.zeros(m))
    got, want = hull_top(run), _hull_top_as_written(run)
    assert got == want or (math.isnan(got) and math.isnan(want)), (got, want)
