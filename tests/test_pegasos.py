"""Pegasos: the scaled kernel against the textbook update, Lemma 1 in every generated run (D), the
expectation bound in the mean over seeds (E), and the variants of docs/bounds.md section 6."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.bounds.pegasos import PEGASOS_BOUNDS
from pipeline.contract import SvmRun
from pipeline.data import MarginBinary
from pipeline.learners.base import log_grid
from pipeline.learners.pegasos import (SAMPLINGS, Pegasos, PegasosCore, PegasosSteps, class_weights, index_stream, pegasos_kernel,
                                       pegasos_single_kernel)
from pipeline.job.statistics import measure

(REGRET, EXPECTATION, HIGH_PROBABILITY, LAST, FULL_BATCH, RANDOM_ITERATE, RANDOM_MARKOV, MARKOV_AVERAGE, LEMMA3, TELESCOPED,
 HINDSIGHT) = PEGASOS_BOUNDS


def textbook(X, y, idx, lam, s, w_ref, radius):  # noqa: ANN001, ANN201
    """P11 Fig. 1-2 as written: explicit w, O(d) shrink, explicit average (the reference)."""
    m, d = X.shape
    T, k = idx.shape
    w = np.zeros(d) if w_ref is None else w_ref.copy()
    ref = np.zeros(d) if w_ref is None else w_ref
    total, active = np.zeros(d), []
    for t in range(1, T + 1):
        total += w
        A = idx[t - 1]
        act = y[A] * (X[A] @ w) < 1
        active.append(int(act.sum()))
        u = (1 - 1 / t) * (w - ref) + (s[A][act] * y[A][act]) @ X[A][act] / (lam * t * k)
        if radius > 0 and np.linalg.norm(u) > radius:
            u *= radius / np.linalg.norm(u)
        w = ref + u
    return w, total / T, np.array(active)


def _run_kernel(X, y, idx, lam, s, w_ref, radius, fn=pegasos_kernel):  # noqa: ANN001, ANN202
    m, d = X.shape
    T = idx.shape[0]
    grid = log_grid(T, 10)
    ref_margin = np.zeros(m) if w_ref is None else y * (X @ w_ref)
    state = np.array([1.0, 0.0, 0.0, 1.0])
    v, z, buf = np.zeros(d), np.zeros(d), np.zeros(d)
    loss, active = np.empty(T), np.empty(T, dtype=np.int32)
    avg, last = np.empty((grid.size, d)), np.empty((grid.size, d))
    fn(X, y, ref_margin, s, idx, lam, radius, 0, grid, state, v, z, buf, loss, active, avg, last, np.empty(T))
    ref = 0.0 if w_ref is None else w_ref
    return state[0] * v + ref, avg[-1] + ref, active, loss, last[-1] + ref


def _data(seed: int, m: int = 60, d: int = 4, flip: float = 0.1):  # noqa: ANN202
    return MarginBinary(gamma=0.1, rho=1.0, n=m, d=d, flip=flip).generate(np.random.default_rng(seed))


@pytest.mark.parametrize("projection", [False, True])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("transfer", [False, True])
def test_scaled_kernel_is_the_textbook_update(projection: bool, k: int, transfer: bool) -> None:
    ds = _data(0)
    X, y = ds.X, ds.y
    rng = np.random.default_rng(5)
    lam, T = 0.05, 400
    idx = index_stream("iid", y, T, k, rng)
    s = np.where(y > 0, 1.3, 0.7)
    w_ref = 0.5 * ds.directions["w*"] if transfer else None
    radius = 1 / math.sqrt(lam) if projection else 0.0
    w, avg, active, loss, last = _run_kernel(X, y, idx, lam, s, w_ref, radius)
    w0, avg0, active0 = textbook(X, y, idx, lam, s, w_ref, radius)
    np.testing.assert_array_equal(active, active0)
    np.testing.assert_allclose(w, w0, rtol=0, atol=1e-10 * max(1, np.abs(w0).max()))
    np.testing.assert_allclose(avg, avg0, rtol=0, atol=1e-10 * max(1, np.abs(avg0).max()))
    np.testing.assert_array_equal(last, w)
    # the compiled kernel equals its plain-Python reference bit for bit
    wp, avgp, activep, lossp, _ = _run_kernel(X, y, idx, lam, s, w_ref, radius, fn=pegasos_kernel.py)
    np.testing.assert_array_equal(w, wp)
    np.testing.assert_array_equal(avg, avgp)
    np.testing.assert_array_equal(loss, lossp)


@pytest.mark.parametrize(("k", "projection", "transfer", "weighted"), [(1, False, False, False), (1, False, True, True),
                                                                       (3, False, True, False), (1, True, False, True),
                                                                       (2, True, True, True)])
@pytest.mark.parametrize("d", [2, 6, 13])
def test_every_output_of_the_compiled_kernels_is_the_plain_references(k: int, projection: bool, transfer: bool,
                                                                      weighted: bool, d: int) -> None:
    """Both compiled kernels (the single-step one where PegasosCore.advance would choose it) write every output
    with the bits of their plain-Python references: the state, v, z, buf, loss, active, grad2 and the snapshots,
    also when continued from a state with A != 0 and z != 0 (t0 > 0). A compile option that reassociates or fuses
    (fastmath, contraction into FMA) changes these bits, and a speed-up of the kernels must keep them."""
    ds = _data(7, m=70, d=d)
    X, y = np.ascontiguousarray(ds.X), np.ascontiguousarray(ds.y)
    rng = np.random.default_rng(k + 10 * d)
    lam, T, t0 = 0.03, 300, 41
    idx = index_stream("iid", y, T, k, rng)
    s = np.where(y > 0, 1.3, 0.7) if weighted else np.ones(y.size)
    ref_margin = y * (X @ ds.directions["w*"]) * 0.5 if transfer else np.zeros(y.size)
    radius = 1.0 / math.sqrt(lam) if projection else 0.0
    grid = log_grid(t0 + T, 9)
    start = [np.array([1.0 / t0, rng.random(), rng.random() * t0, 1.0]), rng.normal(size=d), rng.normal(size=d)]
    kernels = [pegasos_kernel] + ([pegasos_single_kernel] if k == 1 and not projection else [])
    for fn in kernels:
        outs = []
        for f in (fn, fn.py):
            state, v, z = (a.copy() for a in start)
            buf = np.zeros(d)
            o = PegasosSteps(np.full(T, np.nan), np.full(T, -1, dtype=np.int32), np.full(T, np.nan),
                             np.full((grid.size, d), np.nan), np.full((grid.size, d), np.nan))
            f(X, y, ref_margin, s, idx, lam, radius, t0, grid, state, v, z, buf, o.loss, o.active, o.avg, o.last, o.grad2)
            outs.append([state, v, z, buf, o.loss, o.active, o.grad2, o.avg, o.last])
        assert np.any(outs[0][5] > 0) and np.any(outs[0][5] == 0)  # both branches of the step ran
        for compiled, plain in zip(*outs):
            assert compiled.tobytes() == plain.tobytes(), fn.__name__


def test_index_streams() -> None:
    y = np.array([1.0] * 3 + [-1.0] * 7)
    rng = np.random.default_rng(0)
    perm = index_stream("perm", y, 25, 2, rng)
    assert perm.shape == (25, 2)
    for e in range(5):  # every epoch of 10 indices is a permutation
        assert sorted(perm.ravel()[10 * e: 10 * e + 10]) == list(range(10))
    np.testing.assert_array_equal(index_stream("inorder", y, 6, 2, rng).ravel(), np.arange(12) % 10)
    bal = index_stream("class_balanced", y, 20_000, 1, rng).ravel()
    assert abs((y[bal] > 0).mean() - 0.5) < 0.02
    iid = index_stream("iid", y, 20_000, 1, rng).ravel()
    assert abs((y[iid] > 0).mean() - 0.3) < 0.02


@pytest.mark.parametrize(("T", "k", "m"), [(6, 2, 10), (5, 2, 10), (3, 1, 10), (1, 1, 1), (7, 3, 4), (1000, 1, 7)])
def test_inorder_stream_is_the_sample_order_mod_m(T: int, k: int, m: int) -> None:
    idx = index_stream("inorder", np.ones(m), T, k, np.random.default_rng(0))
    assert idx.dtype == np.int64 and idx.shape == (T, k)
    np.testing.assert_array_equal(idx.ravel(), np.arange(T * k) % m)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 30), d=st.integers(1, 13), T=st.integers(1, 400),
       t0=st.sampled_from([0, 0, 1, 17, 10**6]), log_lam=st.floats(-6, 3), log_scale=st.sampled_from([-150, -3, 0, 2, 150]),
       weighted=st.booleans(), transfer=st.booleans(), sampling=st.sampled_from(["iid", "perm", "inorder"]),
       zeros=st.booleans())
def test_single_kernel_is_the_general_kernel_bit_for_bit(seed, m, d, T, t0, log_lam, log_scale, weighted, transfer,  # noqa: ANN001
                                                         sampling: str, zeros: bool) -> None:
    """Batch 1 without projection, PegasosCore.advance runs pegasos_single_kernel: every output (state, v, z, buf,
    the per-step loss and active flags, the snapshots) has the bits of the general compiled kernel, also when a run
    is continued (t0 > 0, a state with A != 0 and z != 0) and at tiny and huge row norms."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) * 10.0**log_scale
    if zeros:  # +0 and -0 entries and whole zero rows: the single kernel's shortcuts differ from 0 + x by a zero's sign
        X[rng.random((m, d)) < 0.3] = -0.0
        X[rng.random((m, d)) < 0.2] = 0.0
        X[rng.random(m) < 0.3] = rng.choice([0.0, -0.0])
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    s = np.where(y > 0, 1.5, 0.75) if weighted else np.ones(m)
    if weighted and zeros:  # some weights of 1: the shortcut of b = +-x, taken by the weighted kernel too
        s[rng.random(m) < 0.5] = 1.0
    ref_margin = y * (X @ rng.normal(size=d)) * 10.0**-log_scale if transfer else np.zeros(m)
    idx = index_stream(sampling, y, T, 1, rng)
    lam = 10.0**log_lam
    grid = log_grid(t0 + max(T, 1), 8)
    start = [np.array([1.0 / max(t0, 1), rng.random(), rng.random() * t0, 1.0]), rng.normal(size=d), rng.normal(size=d)]
    if t0 == 0:
        start = [np.array([1.0, 0.0, 0.0, 1.0]), np.zeros(d), np.zeros(d)]
    def fresh() -> PegasosSteps:
        return PegasosSteps(np.full(T, np.nan), np.full(T, -1, dtype=np.int32), np.full(T, np.nan),
                            np.full((grid.size, d), np.nan), np.full((grid.size, d), np.nan))

    outs = []
    for fn in (pegasos_kernel, pegasos_single_kernel):
        state, v, z = (a.copy() for a in start)
        buf = np.zeros(d)
        o = fresh()
        fn(X, y, ref_margin, s, idx, lam, 0.0, t0, grid, state, v, z, buf, o.loss, o.active, o.avg, o.last, o.grad2)
        outs.append([state, v, z, buf, o.loss, o.active, o.avg, o.last, o.grad2])
    # through the core: with the arrays, then as a run passes them (None: unit weights, no reference), which
    # compiles the kernel without the two reads a step
    for s_arg, ref_arg in ((s, ref_margin), (s if weighted else None, ref_margin if transfer else None)):
        state, v, z = (a.copy() for a in start)
        core = PegasosCore(lam, 0.0, v, z, np.zeros(d), state, t0)
        o = core.advance(X, y, idx, grid, s_arg, ref_arg, out=fresh())
        assert core.t == t0 + T
        outs.append([core.scalars, core.v, core.z, core.buf, o.loss, o.active, o.avg, o.last, o.grad2])
    for general, *others in zip(*outs):
        assert all(general.tobytes() == other.tobytes() for other in others)


@pytest.mark.parametrize(("k", "projection", "transfer"), [(1, False, False), (1, False, True), (3, False, False),
                                                           (1, True, False), (2, True, True)])
@pytest.mark.parametrize("cut", [1, 137, 399])
def test_the_core_advanced_in_two_blocks_is_one_block_bit_for_bit(k: int, projection: bool, transfer: bool,
                                                                   cut: int) -> None:
    """PegasosCore continues exactly (what partial_fit relies on): steps 1..cut then cut+1..T, writing into the
    same snapshot arrays and the two halves of the per-step ones, give every byte of one advance over 1..T,
    whichever kernel the core chooses (batch 1 without projection: the single-step kernel)."""
    ds = _data(3, m=50, d=5)
    X, y = np.ascontiguousarray(ds.X), np.ascontiguousarray(ds.y)
    lam, T = 0.02, 400
    idx = index_stream("iid", y, T, k, np.random.default_rng(11))
    s = np.where(y > 0, 1.25, 0.8)
    ref_margin = y * (X @ ds.directions["w*"]) * 0.5 if transfer else np.zeros(y.size)
    radius = 1.0 / math.sqrt(lam) if projection else 0.0
    grid = log_grid(T, 12)
    one = PegasosCore.start(5, lam, radius)
    whole = one.advance(X, y, idx, grid, s, ref_margin)
    two = PegasosCore.start(5, lam, radius)
    parts = PegasosSteps.empty(T, grid.size, 5)
    first = PegasosSteps(parts.loss[:cut], parts.active[:cut], parts.grad2[:cut], parts.avg, parts.last)
    second = PegasosSteps(parts.loss[cut:], parts.active[cut:], parts.grad2[cut:], parts.avg, parts.last)
    two.advance(X, y, idx[:cut], grid, s, ref_margin, out=first)
    assert two.t == cut
    two.advance(X, y, idx[cut:], grid, s, ref_margin, out=second)
    assert one.t == two.t == T
    for name in ("loss", "active", "grad2", "avg", "last"):
        assert getattr(whole, name).tobytes() == getattr(parts, name).tobytes(), name
    for a, b in ((one.scalars, two.scalars), (one.v, two.v), (one.z, two.z), (one.buf, two.buf)):
        assert a.tobytes() == b.tobytes()
    assert one.u.tobytes() == two.u.tobytes()


def test_class_weights_have_mean_one() -> None:
    y = np.array([1.0] * 10 + [-1.0] * 90)
    s = class_weights(y)
    assert s.mean() == pytest.approx(1.0) and s[0] / s[-1] == pytest.approx(9.0)


def _check_run(ds, learner: Pegasos, seed: int):  # noqa: ANN001, ANN202
    out = measure(learner, ds, np.random.default_rng(seed))
    stats = ds.stats.as_dict() | out.stats
    row = REGRET.evaluate(stats, out.quantities)
    # docs/bounds.md section 4: the comparator's certified gap is <= 1e-9, or <= 1e-3 of the smallest bound in play
    assert out.stats["dual_gap"] <= max(1e-9, 1e-3 * row["theoretical"]), (out.stats["dual_gap"], row["theoretical"])
    assert row["holds"], (row, learner.get_params())
    # Lemma 1 is anytime: it holds for every prefix of the run as well
    t, regret = out.curves["regret"]
    assert np.all(regret <= REGRET.curve_of(stats, t))
    # the certified suboptimality is an upper bound of f - f*, and f - f* >= 0
    assert out.quantities["suboptimality"] >= -1e-9
    # the realised (telescoped) form holds too, and is never above the closed form (||grad_t|| <= G)
    tele = TELESCOPED.evaluate(stats, out.quantities)
    assert tele["holds"], (tele, learner.get_params())
    assert tele["theoretical"] - stats["telescoped_allowance"] <= row["theoretical"] * (1 + 1e-12), (tele, row)
    # the hardest comparator: the best u in hindsight is at least as hard as the SVM optimum, and Lemma 1 holds there
    hind = HINDSIGHT.evaluate(stats, out.quantities)
    assert hind["holds"], (hind, learner.get_params())
    q = out.quantities
    assert q["regret_hindsight_low"] <= q["regret_hindsight"] and q["regret_hindsight"] >= q["regret"] - 1e-9, q
    return out, stats


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(4, 80),
    d=st.integers(2, 6),
    flip=st.sampled_from([0.0, 0.1, 0.3]),
    lam=st.sampled_from([1e-3, 1e-2, 0.1, 1.0, 10.0]),
    T=st.integers(1, 400),
    batch=st.integers(1, 4),
    sampling=st.sampled_from(sorted(SAMPLINGS)),
    projection=st.booleans(),
    objective=st.sampled_from(["hinge", "balanced", "transfer"]),
    rho=st.sampled_from([0.3, 1.0, 4.0]),
)
def test_lemma1_holds_in_every_run(seed, m, d, flip, lam, T, batch, sampling, projection, objective, rho) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=min(0.1, rho), rho=rho, n=m, d=d, flip=flip).generate(np.random.default_rng(seed))
    if sampling == "class_balanced":
        objective = "balanced"
    if objective == "balanced" and len(np.unique(ds.y)) < 2:
        objective = "hinge"
    learner = Pegasos(lam=lam, T=T, batch=min(batch, m), sampling=sampling, projection=projection, objective=objective)
    learner.check()
    _check_run(ds, learner, seed)


@pytest.mark.parametrize(("projection", "objective", "sampling"), [
    (False, "hinge", "iid"), (True, "hinge", "iid"), (False, "balanced", "iid"), (False, "balanced", "class_balanced"),
    (False, "transfer", "iid"),
])
def test_expectation_bound_holds_in_the_mean_over_seeds(projection: bool, objective: str, sampling: str) -> None:
    """(E): the mean certified suboptimality of w_bar over 30 seeds, with a 95 % t interval, is below the bound."""
    ds = MarginBinary(gamma=0.1, rho=1.0, n=300, d=10, flip=0.1, pos_fraction=0.2).generate(np.random.default_rng(3))
    learner = Pegasos(lam=0.01, T=3000, projection=projection, objective=objective, sampling=sampling)
    subs, bounds = [], []
    for seed in range(30):
        out, stats = _check_run(ds, learner, seed)
        row = EXPECTATION.evaluate(stats, out.quantities)
        subs.append(row["empirical"])
        bounds.append(row["theoretical"])
    mean, half = np.mean(subs), 2.045 * np.std(subs, ddof=1) / math.sqrt(len(subs))
    assert mean + half <= np.mean(bounds), (mean, half, np.mean(bounds))


def test_non_iid_sampling_is_flagged_and_last_iterate_is_unguaranteed() -> None:
    ds = _data(1, m=100)
    for sampling in ("perm", "inorder"):
        out, stats = _check_run(ds, Pegasos(lam=0.1, T=500, sampling=sampling), 0)
        row = EXPECTATION.evaluate(stats, out.quantities)
        assert not row["applicable"] and "with replacement" in row["reason"]
        assert not HIGH_PROBABILITY.evaluate(stats, out.quantities)["applicable"]
    out, stats = _check_run(ds, Pegasos(lam=0.1, T=500), 0)
    assert not LAST.evaluate(stats, out.quantities)["applicable"]
    assert EXPECTATION.evaluate(stats, out.quantities)["applicable"]


def test_in_order_epochs_average_the_comparator_loss_exactly() -> None:
    """docs/bounds.md section 4: with in-order sampling and T a multiple of m, (1/T) sum f_t(u) = f(u)."""
    from pipeline.solvers import dual

    ds = _data(2, m=50)
    out, stats = _check_run(ds, Pegasos(lam=0.1, T=500, sampling="inorder"), 0)
    f_u = out.trace["comparator_loss"].mean()
    assert f_u == pytest.approx(stats["f_star_hi"], rel=1e-9, abs=1e-9)
    assert stats["f_star_lo"] <= f_u + 1e-12 or abs(f_u - stats["f_star_lo"]) <= 1e-9
    assert dual.objective(ds.X, ds.y, 0.1, np.zeros(ds.X.shape[1])) == pytest.approx(stats["f_start"])


def test_high_probability_bound_conditions() -> None:
    ds = MarginBinary(gamma=0.1, rho=2.0, n=100, d=4).generate(np.random.default_rng(0))
    out, stats = _check_run(ds, Pegasos(lam=0.1, T=1000), 0)
    row = HIGH_PROBABILITY.evaluate(stats, out.quantities)
    assert row["applicable"] and row["holds"]
    out, stats = _check_run(ds, Pegasos(lam=0.5, T=1000), 0)
    assert "lam <= 1/4" in HIGH_PROBABILITY.evaluate(stats, out.quantities)["reason"]


def test_projection_keeps_iterates_in_the_ball() -> None:
    ds = _data(4, m=100, flip=0.3)
    lam = 0.01
    learner = Pegasos(lam=lam, T=2000, projection=True)
    learner.run(ds, np.random.default_rng(0))
    assert np.linalg.norm(learner.w_) <= 1 / math.sqrt(lam) * (1 + 1e-12)


def test_same_seed_same_bits() -> None:
    ds = _data(5)
    a = measure(Pegasos(lam=0.01, T=700, batch=2), ds, np.random.default_rng(9))
    b = measure(Pegasos(lam=0.01, T=700, batch=2), ds, np.random.default_rng(9))
    for key in a.trace:
        np.testing.assert_array_equal(a.trace[key], b.trace[key])
    assert a.quantities == b.quantities


# --- A_t = S: the deterministic form of Cor. 1 (docs/bounds.md section 4, `full_batch`) -----------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 80),
    d=st.integers(2, 8),
    lam=st.sampled_from([3.0, 1.0, 0.3, 0.1, 0.01]),
    T=st.integers(1, 400),
    flip=st.sampled_from([0.0, 0.1, 0.3]),
    sampling=st.sampled_from(["perm", "inorder"]),
    projection=st.booleans(),
)
def test_the_full_batch_bound_holds_in_every_run(seed, n, d, lam, T, flip, sampling, projection) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=0.05, rho=1.0, n=n, d=d, flip=flip).generate(np.random.default_rng(seed))
    learner = Pegasos(lam=lam, T=T, batch=n, sampling=sampling, projection=projection)
    out = measure(learner, ds, np.random.default_rng(seed + 1))
    row = FULL_BATCH.evaluate(ds.stats.as_dict() | out.stats, out.quantities)
    assert row["applicable"] and row["holds"], (row, learner.get_params())


@pytest.mark.parametrize(("batch", "sampling"), [(40, "iid"), (39, "perm"), (40, "class_balanced")])
def test_the_full_batch_bound_needs_the_whole_sample_every_step(batch: int, sampling: str) -> None:
    ds = MarginBinary(gamma=0.05, rho=1.0, n=40, d=3, flip=0.1).generate(np.random.default_rng(2))
    objective = "balanced" if sampling == "class_balanced" else "hinge"
    out = measure(Pegasos(lam=0.1, T=50, batch=batch, sampling=sampling, objective=objective), ds, np.random.default_rng(3))
    row = FULL_BATCH.evaluate(ds.stats.as_dict() | out.stats, out.quantities)
    assert not row["applicable"] and "A_t = S" in row["reason"]


def test_a_full_batch_is_the_whole_sample_in_every_step() -> None:
    """batch = m under perm and inorder: every row of the index stream is a permutation of the sample."""
    for sampling in ("perm", "inorder"):
        idx = index_stream(sampling, np.ones(37), 25, 37, np.random.default_rng(0))
        assert all(np.array_equal(np.sort(row), np.arange(37)) for row in idx)


# --- the random iterate w_r, r uniform in 1..T (P07 Thm 2-3; docs/bounds.md section 4) -------------------

@pytest.mark.parametrize(("T", "seed"), [(1, 0), (2, 1), (57, 2), (1000, 3), (1000, 4)])
def test_the_random_iterate_is_the_iterate_at_step_r_and_changes_nothing_else(T: int, seed: int) -> None:
    ds = MarginBinary(gamma=0.05, rho=1.0, n=60, d=4, flip=0.1).generate(np.random.default_rng(seed))
    learner = Pegasos(lam=0.05, T=T, batch=2)
    out = learner.run(ds, np.random.default_rng(seed))
    it, r = out.run, out.stats["r"]
    assert isinstance(it, SvmRun) and 1 <= r <= T
    X, y, grid, d = it.X, it.y, it.grid, ds.X.shape[1]

    def kernel(steps: np.ndarray) -> tuple[PegasosCore, PegasosSteps]:
        core = PegasosCore.start(d, 0.05)
        return core, core.advance(X, y, it.idx, steps, it.s_step, it.ref_margin)

    core, done = kernel(grid)  # the run without the extra snapshot: the same bytes
    assert done.loss.tobytes() == it.loss.tobytes() and done.active.tobytes() == out.trace["active"].tobytes()
    assert done.avg.tobytes() == it.avg.tobytes() and done.last.tobytes() == it.last.tobytes()
    assert core.u.tobytes() == learner.w_.tobytes()
    if r == 1:
        assert not it.random.any()  # w_1 = 0
    else:  # u_r is the "last" snapshot after step r - 1
        assert kernel(np.array([r - 1], dtype=grid.dtype))[1].last[0].tobytes() == it.random.tobytes()


def test_the_random_iterate_bounds_need_sampling_with_replacement() -> None:
    ds = MarginBinary(gamma=0.05, rho=1.0, n=80, d=3, flip=0.1).generate(np.random.default_rng(5))
    for sampling, applies in (("iid", True), ("perm", False), ("inorder", False)):
        out = measure(Pegasos(lam=0.1, T=200, sampling=sampling), ds, np.random.default_rng(6))
        for bound in (RANDOM_ITERATE, RANDOM_MARKOV):
            row = bound.evaluate(ds.stats.as_dict() | out.stats, out.quantities)
            assert row["applicable"] == applies
            assert out.quantities["suboptimality_random"] >= out.quantities["suboptimality_random_low"]


def test_the_random_iterate_is_within_its_expectation_bound_on_average() -> None:
    """40 seeds of one setting: the mean of f(w_r) - f* (upper estimates) stays below c (1 + ln T)/(2 lam T),
    and the Markov reading's violations are rarer than delta allows (an (E) and a (P) statement, checked as such)."""
    ds = MarginBinary(gamma=0.05, rho=1.0, n=100, d=4, flip=0.1).generate(np.random.default_rng(7))
    rows = []
    for seed in range(40):
        out = measure(Pegasos(lam=0.1, T=300, delta=0.1), ds, np.random.default_rng(seed))
        stats = ds.stats.as_dict() | out.stats
        rows.append((RANDOM_ITERATE.evaluate(stats, out.quantities), RANDOM_MARKOV.evaluate(stats, out.quantities)))
    mean = np.mean([e["empirical"] for e, _ in rows])
    assert mean <= rows[0][0]["theoretical"]
    assert sum(not p["holds"] for _, p in rows) <= 4


# --- An unregularised bias (algorithm.intercept) ---------------------------------------------------------------


def _biased_reference(X, y, ref_margin, s, idx, lam, radius):  # noqa: ANN001, ANN202
    """Pegasos with an unregularised bias written out step by step (P11 section 6), in the kernel's order."""
    T, k = idx.shape
    d = X.shape[1]
    u, b, ubar, bsum = [0.0] * d, 0.0, [0.0] * d, 0.0
    loss, active = [], []
    for r in range(T):
        t = r + 1
        ubar = [ubar[j] + u[j] for j in range(d)]
        uu = 0.0
        for j in range(d):
            uu += u[j] * u[j]
        bsum += b
        g, gb, hinge, n = [0.0] * d, 0.0, 0.0, 0
        for q in range(k):
            i = idx[r, q]
            p = 0.0
            for j in range(d):
                p += u[j] * X[i, j]
            margin = ref_margin[i] + y[i] * (p + b)
            if margin < 1.0:
                hinge += s[i] * (1.0 - margin)
                n += 1
                gb += s[i] * y[i]
                g = [g[j] + s[i] * y[i] * X[i, j] for j in range(d)]
        loss.append(0.5 * lam * uu + hinge / k)
        active.append(n)
        eta, shrink = 1.0 / (lam * t * k), 1.0 - 1.0 / t
        u = [shrink * u[j] + eta * g[j] for j in range(d)]
        b += eta * gb
        norm2 = 0.0
        for j in range(d):
            norm2 += u[j] * u[j]
        if radius > 0.0 and norm2 > radius * radius:
            u = [v * (radius / math.sqrt(norm2)) for v in u]
    return np.array(u), b, np.array(ubar) / T, bsum / T, np.array(loss), np.array(active)


@pytest.mark.parametrize("objective", ["hinge", "balanced", "transfer"])
@pytest.mark.parametrize(("batch", "projection"), [(1, False), (3, True)])
def test_the_intercept_rule_is_the_written_out_one_bit_for_bit(objective: str, batch: int, projection: bool) -> None:
    ds = MarginBinary(gamma=0.1, rho=2.0, n=60, d=4, flip=0.1).generate(np.random.default_rng(3))
    learner = Pegasos(lam=0.05, T=300, batch=batch, objective=objective, projection=projection, intercept=True)
    out = learner.run(ds, np.random.default_rng(4))
    # the same draws as the run: the reference w_r first (transfer), then the index stream
    rng = np.random.default_rng(4)
    w_ref = learner.reference(ds, rng)
    idx = index_stream("iid", ds.y, 300, batch, rng)
    X, y = ds.X, ds.y.astype(float)
    ref_margin = pegasos_margins(X, y, w_ref)
    s = learner.weights(y) if objective == "balanced" else np.ones(60)
    radius = 0.0
    if projection:
        radius = math.sqrt(np.maximum(0.0, 1.0 - ref_margin).mean() / 0.05) if w_ref is not None else 1 / math.sqrt(0.05)
    u, b, ubar, bbar, loss, active = _biased_reference(X, y, ref_margin, s, idx, 0.05, radius)
    shift = 0.0 if w_ref is None else w_ref
    np.testing.assert_array_equal(learner.w_, u + shift)
    np.testing.assert_array_equal(learner.w_bar_, ubar + shift)
    assert (learner.b_, learner.b_bar_) == (b, bbar)
    np.testing.assert_array_equal(out.trace["loss"], loss)
    np.testing.assert_array_equal(out.trace["active"], active)


def pegasos_margins(X, y, w_ref):  # noqa: ANN001, ANN201
    from pipeline.learners.pegasos import margins_kernel

    return np.zeros(X.shape[0]) if w_ref is None else margins_kernel(X, y.astype(float), w_ref)


def test_with_an_intercept_every_bound_is_not_applicable_with_the_reason() -> None:
    from pipeline.bounds import bounds_for
    from pipeline.learners.pegasos import NO_BOUND_WITH_BIAS

    ds = MarginBinary(gamma=0.1, rho=1.0, n=100, d=3, flip=0.1).generate(np.random.default_rng(0))
    out = measure(Pegasos(lam=0.1, T=500, intercept=True), ds, np.random.default_rng(1))
    stats = ds.stats.as_dict() | out.stats
    rows = [b.evaluate(stats, out.quantities, out.steps) for b in bounds_for("pegasos")]
    assert rows and all(r["applicable"] is False and r["holds"] is None and r["reason"] == NO_BOUND_WITH_BIAS
                        for r in rows)
    assert "P11 section 6" in NO_BOUND_WITH_BIAS


def test_an_intercept_fits_data_whose_separator_misses_the_origin() -> None:
    """Labels sign(x_1 - 0.6) with x uniform in [0, 1]^2: no homogeneous separator is good, one with b is."""
    from pipeline.data.certify import certify_sample
    from pipeline.data.dataset import Dataset

    rng = np.random.default_rng(0)
    X = rng.random((400, 2))
    y = np.where(X[:, 0] > 0.6, 1.0, -1.0)
    ds = Dataset("offset", X, y, certify_sample(X, y))
    errors = {}
    for intercept in (False, True):
        learner = Pegasos(lam=1e-3, T=20_000, intercept=intercept)
        learner.run(ds, np.random.default_rng(1))
        b = learner.b_bar_ if intercept else 0.0
        errors[intercept] = float(np.mean(np.sign(X @ learner.w_bar_ + b) != y))
    assert errors[True] <= 0.05 and errors[False] >= 0.2, errors


def test_one_vs_all_with_intercepts_reports_every_part_not_applicable() -> None:
    from pipeline.data.multiclass import MulticlassMargin
    from pipeline.learners import OneVsAll

    ds = MulticlassMargin(k=3, n=200, d=4, gamma=0.1, rho=1.0).generate(np.random.default_rng(0))
    learner = OneVsAll(lam=0.01, T=2000, intercept=True)
    out = measure(learner, ds, np.random.default_rng(1))  # the held-out risk: pipeline.job.statistics
    assert learner.b_.shape == (3,) and np.all(learner.b_ != 0.0)
    assert all(part.stats["not_covered"] for part in out.parts.values())
    assert out.stats["risk_01"] <= 0.2


def test_the_estimators_refuse_an_intercept() -> None:
    from pipeline.estimators import OneVsAllClassifier, PegasosClassifier
    from pipeline.params import ParamError

    X = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(ParamError, match="intercept"):
        PegasosClassifier(lam=0.1, T=10, intercept=True).fit(X, np.where(X[:, 0] > 0, 1, -1))
    with pytest.raises(ParamError, match="intercept"):
        OneVsAllClassifier(lam=0.1, T=10, intercept=True).fit(X, np.arange(20) % 3)


# --- The realised form of Lemma 1 ------------------------------------------------------------------------------


@pytest.mark.parametrize(("batch", "projection", "objective"),
                         [(1, False, "hinge"), (3, True, "balanced"), (2, False, "transfer")])
def test_the_kernel_gives_the_norm_of_each_sub_gradient(batch: int, projection: bool, objective: str) -> None:
    """grad2[t] = ||lam u_t - (1/k) sum_(A+) s_i y_i x_i||^2, u_t = w_t - w_r, from a loop written out in numpy."""
    ds = MarginBinary(gamma=0.1, rho=2.0, n=50, d=4, flip=0.1).generate(np.random.default_rng(5))
    learner = Pegasos(lam=0.05, T=400, batch=batch, projection=projection, objective=objective)
    out = learner.run(ds, np.random.default_rng(6))
    it = out.run
    assert isinstance(it, SvmRun)
    X, y, s, idx, lam, radius = it.X, it.y, it.s_step, it.idx, 0.05, it.radius
    u = np.zeros(X.shape[1])
    expected = []
    for t in range(1, 401):
        A = idx[t - 1]
        act = it.ref_margin[A] + y[A] * (X[A] @ u) < 1
        g = lam * u - (s[A][act] * y[A][act]) @ X[A][act] / batch
        expected.append(float(g @ g))
        u = u - g / (lam * t)
        if radius > 0 and np.linalg.norm(u) > radius:
            u *= radius / np.linalg.norm(u)
    np.testing.assert_allclose(it.grad2, expected, rtol=1e-9, atol=1e-12)


def test_the_realised_form_is_an_equality_when_nothing_is_lost() -> None:
    """T = 1 with a comparator active on the step: the telescoped sum is the regret itself (up to rounding), so
    the bound is attained; the allowance is what keeps rounding from calling it violated."""
    ds = MarginBinary(gamma=0.1, rho=1.0, n=200, d=5, flip=0.1).generate(np.random.default_rng(0))
    attained = 0
    for seed in range(20):
        out = measure(Pegasos(lam=0.01, T=1), ds, np.random.default_rng(seed))
        stats = ds.stats.as_dict() | out.stats
        row = TELESCOPED.evaluate(stats, out.quantities)
        assert row["holds"], row
        realised = stats["telescoped"] - stats["telescoped_allowance"]
        if abs(realised - out.quantities["regret"]) <= 1e-9 * max(1.0, abs(realised)):
            attained += 1
    assert attained >= 10  # the comparator is active on most examples of a noisy sample


def test_the_realised_form_is_much_sharper_than_the_closed_form() -> None:
    ds = MarginBinary(gamma=0.1, rho=1.0, n=500, d=5, flip=0.1).generate(np.random.default_rng(0))
    out = measure(Pegasos(lam=0.01, T=5000), ds, np.random.default_rng(1))
    stats = ds.stats.as_dict() | out.stats
    closed, tele = REGRET.evaluate(stats, out.quantities), TELESCOPED.evaluate(stats, out.quantities)
    assert tele["holds"] and tele["informative"]
    assert tele["ratio"] >= 0.5 > 0.2 >= closed["ratio"], (tele["ratio"], closed["ratio"])


@pytest.mark.parametrize("projection", [False, True])
def test_the_best_comparator_in_hindsight_is_the_minimum_of_the_runs_own_objective(projection: bool) -> None:
    import cvxpy as cp

    ds = _data(5, m=40, d=3, flip=0.2)
    lam, T = 0.05, 300
    out = measure(Pegasos(lam=lam, T=T, batch=2, projection=projection), ds, np.random.default_rng(1),
                  bounds=[REGRET, HINDSIGHT])
    it = out.run
    assert isinstance(it, SvmRun)
    idx, k = it.idx, it.idx.shape[1]
    u = cp.Variable(ds.X.shape[1])
    hinge = cp.pos(1 - cp.multiply(ds.y, ds.X @ u))
    counts = np.bincount(idx.ravel(), minlength=ds.X.shape[0])
    objective = lam / 2 * cp.sum_squares(u) + counts @ hinge / (T * k)
    cons = [cp.norm(u) <= it.radius] if projection else []
    best = cp.Problem(cp.Minimize(objective), cons).solve(solver=cp.CLARABEL)
    worst_regret = float(np.mean(it.loss)) - best
    q = out.quantities
    assert q["regret_hindsight_low"] - 1e-7 <= worst_regret <= q["regret_hindsight"] + 1e-7, (q, worst_regret)
    assert q["regret_hindsight"] - q["regret_hindsight_low"] < 1e-6 or projection
