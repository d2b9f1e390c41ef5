"""The Perceptron: fast path against the reference, learn_one against learn_stream, and Novikoff's
bound over hypothesis-generated streams under every tie convention (docs/bounds.md section 1)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.bounds import NOVIKOFF
from pipeline.data import MarginBinary, certify, margin_lower, radius
from pipeline.learners import Perceptron
from pipeline.learners.perceptron import TIES, perceptron_kernel

TIE = st.sampled_from(sorted(TIES))


def stream(seed: int = 0, n: int = 300, d: int = 8, gamma: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    ds = MarginBinary(gamma=gamma, rho=1.0, n=n, d=d).generate(np.random.default_rng(seed))
    return ds.X, ds.y


@pytest.mark.parametrize("tie", sorted(TIES))
def test_compiled_kernel_equals_the_plain_reference(tie: str) -> None:
    X, y = stream(seed=3)
    X[::7] = np.round(X[::7], 1)  # coarse values: exact ties w.x = 0 happen
    runs = []
    for f in (perceptron_kernel, perceptron_kernel.py):
        w, trace = np.zeros(X.shape[1]), np.zeros(3 * X.shape[0], dtype=np.int8)
        updates = f(X, y, w, TIES[tie], 3, trace)
        runs.append((updates, w, trace))
    (u1, w1, t1), (u2, w2, t2) = runs
    assert u1 == u2 == t1.sum() and np.array_equal(t1, t2) and np.array_equal(w1, w2)  # bit-identical


@pytest.mark.parametrize("tie", sorted(TIES))
def test_learn_one_matches_learn_stream(tie: str) -> None:
    X, y = stream(seed=1)
    fast, slow = Perceptron(tie=tie), Perceptron(tie=tie)
    trace = fast.learn_stream(X, y)
    flags = [slow.learn_one(x, label) for x, label in zip(X, y)]
    assert np.array_equal(trace, np.array(flags, dtype=np.int8))
    assert np.array_equal(fast.w_, slow.w_) and fast.mistakes_ == slow.mistakes_ and fast.t_ == slow.t_ == len(y)


def test_passes_equal_repeated_streams() -> None:
    X, y = stream(seed=2)
    two = Perceptron(passes=2)
    t2 = two.learn_stream(X, y)
    once = Perceptron()
    t1 = np.concatenate([once.learn_stream(X, y), once.learn_stream(X, y)])
    assert np.array_equal(t1, t2) and np.array_equal(two.w_, once.w_)


@pytest.mark.parametrize(("tie", "expected"), [("negative", -1), ("positive", 1), ("mistake", -1)])
def test_predict_before_learning_follows_the_tie_rule(tie: str, expected: int) -> None:
    assert Perceptron(tie=tie).predict_one(np.ones(3)) == expected


def test_prediction_is_the_sign_of_the_learned_weights() -> None:
    X, y = stream(seed=4)
    p = Perceptron(passes=50)
    p.learn_stream(X, y)
    assert [p.predict_one(x) for x in X] == [int(v) for v in y]  # separable: converged after 50 passes


def test_inputs_are_not_mutated_and_learner_pickles() -> None:
    X, y = stream(seed=5)
    X0, y0 = X.copy(), y.copy()
    p = Perceptron()
    p.learn_stream(X, y)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)
    clone = pickle.loads(pickle.dumps(p))
    assert np.array_equal(clone.w_, p.w_) and clone.predict_one(X[0]) == p.predict_one(X[0])


def test_bad_parameters_fail_early() -> None:
    with pytest.raises(ValueError, match="tie="):
        Perceptron(tie="zero").learn_one(np.ones(2), 1)
    with pytest.raises(ValueError, match="passes="):
        Perceptron(passes=0).learn_stream(np.ones((2, 2)), np.ones(2))


def _check_novikoff(X: np.ndarray, y: np.ndarray, stats: dict, tie: str, passes: int) -> None:
    p = Perceptron(tie=tie, passes=passes)
    trace = p.learn_stream(X, y)
    row = NOVIKOFF.evaluate(stats | {"T": trace.size}, p.quantities(trace))
    assert row["applicable"]
    assert row["empirical"] == p.mistakes_ == trace.sum()
    assert row["holds"], f"{p.mistakes_} mistakes > bound {row['theoretical']}"


@settings(max_examples=200, deadline=None)
@given(
    gamma=st.floats(1e-2, 1.0),
    ratio=st.floats(1.0, 30.0),
    n=st.integers(2, 400),
    d=st.integers(2, 30),
    seed=st.integers(0, 2**32 - 1),
    tie=TIE,
    passes=st.integers(1, 4),
    shuffle=st.booleans(),
)
def test_novikoff_holds_on_generated_streams(gamma, ratio, n, d, seed, tie, passes, shuffle) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=gamma, rho=gamma * ratio, n=n, d=d).generate(np.random.default_rng(seed))
    order = np.random.default_rng(seed + 1).permutation(n) if shuffle else np.arange(n)
    _check_novikoff(ds.X[order], ds.y[order], ds.stats.as_dict(), tie, passes)  # any order: same statistics


@settings(max_examples=200, deadline=None)
@given(
    points=st.lists(st.lists(st.integers(-8, 8), min_size=3, max_size=3), min_size=1, max_size=60),
    direction=st.lists(st.integers(-5, 5), min_size=3, max_size=3).filter(any),
    tie=TIE,
    passes=st.integers(1, 5),
)
def test_novikoff_holds_on_lattice_streams(points, direction, tie, passes) -> None:  # noqa: ANN001
    """Small integer points make exact ties w.x = 0 frequent, the case where the conventions differ."""
    X = np.array(points, dtype=np.float64)
    w = np.array(direction, dtype=np.float64)
    margin = X @ w
    X, margin = X[margin != 0], margin[margin != 0]
    if len(X) == 0:
        return
    y = np.sign(margin)
    stats = {"R": radius(X), "gamma_lo": margin_lower(X, y, w), "separable": True}
    _check_novikoff(X, y, stats, tie, passes)


@pytest.mark.parametrize("tie", sorted(TIES))
@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 17, 64, 100, 257])
@pytest.mark.parametrize("rho", [0.1, 0.3, 1.0, 3.7, 1e3])
def test_tight_construction_reaches_the_bound_exactly(tie: str, n: int, rho: float) -> None:
    """x_t = rho e_t: gamma* = rho/sqrt(n), the bound is n and one pass makes n updates (docs/bounds.md section 1).
    Reported as holding with ratio exactly 1, whatever the rounding of gamma_lo."""
    label = 1.0 if tie != "positive" else -1.0  # a tie must be a mistake under the convention
    X, y = rho * np.eye(n), np.full(n, label)
    stats = certify(X, y, w=y.copy(), alpha=np.ones(n)).as_dict()
    p = Perceptron(tie=tie)
    trace = p.learn_stream(X, y)
    row = NOVIKOFF.evaluate(stats | {"T": trace.size}, p.quantities(trace))
    assert row["empirical"] == n and row["theoretical"] == n
    assert row["holds"] is True and row["ratio"] == 1.0


def test_novikoff_not_applicable_without_separability() -> None:
    row = NOVIKOFF.evaluate({"R": 1.0, "gamma_lo": -0.1, "separable": False, "T": 10}, {"mistakes": 5})
    assert row["applicable"] is False and row["holds"] is None and "separable" in row["reason"]


# --- Non-separable streams (docs/bounds.md section 2) --------------------------------------------------

from pipeline.bounds import FREUND_SCHAPIRE, HINGE  # noqa: E402
from pipeline.solvers.comparators import comparator_margins  # noqa: E402


def _noisy(gamma, flip, violators, depth, n, d, seed):  # noqa: ANN001, ANN202
    gen = MarginBinary(gamma=gamma, rho=1.0, n=n, d=d, flip=flip, violators=violators, depth=depth)
    return gen.generate(np.random.default_rng(seed))


@settings(max_examples=120, deadline=None)
@given(
    gamma=st.floats(0.02, 0.5),
    flip=st.floats(0.0, 0.3),
    violators=st.floats(0.0, 0.3),
    depth=st.floats(0.0, 0.5),
    n=st.integers(2, 300),
    d=st.integers(2, 12),
    seed=st.integers(0, 2**32 - 1),
    tie=TIE,
    passes=st.integers(1, 3),
)
def test_nonseparable_bounds_hold_on_noisy_streams(gamma, flip, violators, depth, n, d, seed, tie, passes) -> None:  # noqa: ANN001
    ds = _noisy(gamma, flip, violators, depth, n, d, seed)
    p = Perceptron(tie=tie, passes=passes)
    trace = p.learn_stream(ds.X, ds.y)
    stats = ds.stats.as_dict() | {"T": trace.size, "comparators": comparator_margins(ds.X, ds.y, ds.directions)}
    for bound in (HINGE, FREUND_SCHAPIRE):
        row = bound.evaluate(stats, p.quantities(trace))
        assert row["applicable"] and row["holds"], (bound.name, row["empirical"], row["theoretical"], row["comparator"])


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 200),
    d=st.integers(1, 8),
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(1e-3, 1e3),
    gamma=st.floats(1e-3, 2.0),
    tie=TIE,
    passes=st.integers(1, 3),
)
def test_the_theorems_hold_for_any_fixed_comparator(n, d, seed, scale, gamma, tie, passes) -> None:  # noqa: ANN001
    """The statements themselves, for an arbitrary u fixed before the run, on arbitrary labels:
    |M| <= ((R||u|| + sqrt(R^2||u||^2 + 4 L_T(u)))/2)^2 and, for ||u|| = 1, |M| <= ((R + D)/gamma)^2."""
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((n, d)), np.where(rng.random(n) < 0.5, 1.0, -1.0)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    p = Perceptron(tie=tie, passes=passes)
    M = p.learn_stream(X, y).sum()
    R = np.linalg.norm(X, axis=1).max()
    margins = y * (X @ v)
    L = passes * np.maximum(0.0, 1.0 - scale * margins).sum()
    assert M <= ((R * scale + np.sqrt((R * scale) ** 2 + 4 * L)) / 2) ** 2 * (1 + 1e-9)
    D = np.sqrt(passes * (np.maximum(0.0, gamma - margins) ** 2).sum())
    assert M <= ((R + D) / gamma) ** 2 * (1 + 1e-9)


def test_minimised_bounds_never_exceed_their_value_at_the_generator_direction() -> None:
    ds = _noisy(0.1, 0.05, 0.0, 0.0, 500, 10, 0)
    stats = ds.stats.as_dict() | {"T": 500, "comparators": comparator_margins(ds.X, ds.y, ds.directions)}
    margins = stats["comparators"]["w*"]
    best = HINGE.evaluate(stats, {"mistakes": 0})["theoretical"]
    for s in (1.0, 5.0, 10.0, 20.0):
        L = np.maximum(0.0, 1.0 - s * margins).sum()
        assert best <= ((stats["R"] * s + np.sqrt((stats["R"] * s) ** 2 + 4 * L)) / 2) ** 2 * 1.05  # grid step
    # the bound reads the data only: what the learner did does not move it
    assert HINGE.evaluate(stats, {"mistakes": 7})["theoretical"] == best


def test_noise_knobs_make_the_data_non_separable_and_solvers_certify_it() -> None:
    clean = _noisy(0.1, 0.0, 0.0, 0.0, 400, 5, 1)
    noisy = _noisy(0.1, 0.2, 0.0, 0.0, 400, 5, 1)
    inside = _noisy(0.1, 0.0, 1.0, 0.0, 400, 5, 1)  # every point inside the margin, none across
    assert clean.stats.separable and not noisy.stats.separable
    assert inside.stats.separable and inside.stats.gamma_hi <= 0.1 * (1 + 1e-9)
    assert np.array_equal(clean.X, _noisy(0.1, 0.2, 0.0, 0.0, 400, 5, 1).X)  # flips change labels only


def _sums(squared: bool, rows: np.ndarray, margins: np.ndarray, reference: bool = False) -> np.ndarray:
    """The hinge sums (Freund and Schapire's when ``squared``) at every row value over the sorted margins, by the
    searches' ``_sum_at`` (``reference``: its Python form)."""
    import pipeline.bounds.perceptron as bp

    at, m = (bp._sum_at.py if reference else bp._sum_at), np.sort(margins)
    return np.array([at(float(a), 1.0, m, True) if squared else at(1.0, float(a), m, False) for a in rows])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.floats(-0.5, 0.5), st.floats(0.01, 1.0), st.floats(0.05, 20.0),
       st.integers(0, 2**32 - 1))
def test_the_hinge_bounds_sums_hold_every_term_within_their_rounding_factor(m: int, centre: float, spread: float,
                                                                            R: float, seed: int) -> None:
    """The two bounds' sums over the margins (compiled, in sorted order, stopping where the terms reach zero)
    are within the bounds' rounding factor (1 + 2 m u) of the exact sum of the very terms numpy's table forms
    (math.fsum of the table's row: exactly rounded): the factor the bounds multiply by covers them. Ties,
    repeats and negative margins included; the compiled sums are the same bits as their Python references."""
    import math

    import pipeline.bounds.perceptron as bp
    from pipeline.numerics import UNIT_ROUNDOFF

    rng = np.random.default_rng(seed)
    margins = np.round(rng.normal(centre, spread, size=m), int(rng.integers(2, 17)))  # rounding makes ties
    cases = ((False, bp.SCALES / R, np.maximum(0.0, 1.0 - np.outer(bp.SCALES / R, margins))),
             (True, bp.GAMMAS * R, np.maximum(0.0, (bp.GAMMAS * R)[:, None] - margins[None, :]) ** 2))
    for squared, rows, table in cases:
        got = _sums(squared, rows, margins)
        exact = np.array([math.fsum(row) for row in table])
        assert np.all(exact <= got * (1 + 2 * m * UNIT_ROUNDOFF)) and np.all(got <= exact * (1 + 2 * m * UNIT_ROUNDOFF))
        if m <= 64:
            assert np.array_equal(got, _sums(squared, rows, margins, reference=True))


def _least_by_tables(s: dict) -> tuple[tuple[float, str], tuple[float, str]]:
    """The two hinge bounds as numpy tables would give them: every scale's and margin's value formed, numpy's
    argmin in each comparator, the first comparator with the least value kept (the sums: :func:`_sums`)."""
    import math

    import pipeline.bounds.perceptron as bp
    from pipeline.numerics import UNIT_ROUNDOFF

    R, hinge, fs = s["R"], (math.inf, ""), (math.inf, "")
    for name, m in s["comparators"].items():
        scales = bp.SCALES / R
        s_all = np.append(scales, 1.0 / m.min()) if m.size and m.min() > 0 else scales
        loss = s["T"] / m.size * _sums(False, s_all, m) * (1 + 2 * len(m) * UNIT_ROUNDOFF)
        value = ((R * s_all + np.sqrt((R * s_all) ** 2 + 4 * loss)) / 2) ** 2 * (1 + 8 * UNIT_ROUNDOFF)
        i = int(np.argmin(value))
        if value[i] < hinge[0]:
            hinge = (float(value[i]), f"u = {s_all[i]:.4g} * {name}, L_T(u) = {loss[i]:.4g}")
        gammas = bp.GAMMAS * R
        D = np.sqrt(s["T"] / m.size * _sums(True, gammas, m) * (1 + 2 * len(m) * UNIT_ROUNDOFF))
        value = ((R + D) / gammas) ** 2 * (1 + 8 * UNIT_ROUNDOFF)
        i = int(np.argmin(value))
        if value[i] < fs[0]:
            fs = (float(value[i]), f"u = {name}, gamma = {gammas[i]:.4g}, D = {D[i]:.4g}")
    return (float(math.floor(hinge[0])) if math.isfinite(hinge[0]) else hinge[0], hinge[1]), fs


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 7), st.integers(1, 400), st.floats(0.1, 20.0), st.integers(1, 5000), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_the_hinge_bounds_least_is_the_tables_least(k: int, m: int, R: float, T: int, repeat: bool, seed: int) -> None:
    """Each bound's search over its grid, compiled (no table formed), gives the value and the words the tables
    give: the same bits, the same scale or margin, the same comparator on ties (a repeated comparator)."""
    import pipeline.bounds.perceptron as bp

    rng = np.random.default_rng(seed)
    comparators = {f"c{j}": np.round(rng.normal(rng.uniform(-0.3, 0.5), rng.uniform(0.01, 1.0), m),
                                     int(rng.integers(2, 17))) for j in range(k)}
    if repeat:
        comparators["again"] = comparators["c0"].copy()
    stats = {"R": R, "T": T, "comparators": comparators}
    assert (bp._hinge_all_rounds(stats), bp._freund_schapire(stats)) == _least_by_tables(stats)


# --- the batch Perceptron ([S1] slides 2-3; docs/bounds.md section 1, the batch form) ------------------

from pipeline.bounds.perceptron import BATCH_PASSES  # noqa: E402
from pipeline.learners import BatchPerceptron  # noqa: E402


def _plain_batch(X: np.ndarray, y: np.ndarray, tie: str, limit: int) -> tuple[np.ndarray, list[int], bool]:
    """[S1]'s batch form written out: cycle over the sample, update on each mistake, stop after a clean pass."""
    w, trace = np.zeros(X.shape[1]), []
    for _ in range(limit):
        clean = True
        for x, label in zip(X, y):
            s = float(np.dot(w, x))
            wrong = label * s <= 0 if tie == "mistake" else (1.0 if s > 0 or (s == 0 and tie == "positive") else -1.0) != label
            trace.append(int(wrong))
            if wrong:
                w = w + label * x
                clean = False
        if clean:
            return w, trace, True
    return w, trace, False


@settings(max_examples=100, deadline=None)
@given(
    points=st.lists(st.lists(st.integers(-6, 6), min_size=4, max_size=4), min_size=1, max_size=40),
    direction=st.lists(st.integers(-4, 4), min_size=4, max_size=4).filter(any),
    tie=TIE,
    limit=st.integers(1, 60),
    sparse=st.booleans(),
)
def test_the_batch_perceptron_equals_the_plain_batch_form(points, direction, tie, limit, sparse) -> None:  # noqa: ANN001
    """Integer points: every sum is exact, so the compiled passes and the written-out loop agree bit for bit."""
    import scipy.sparse as sp

    X = np.array(points, dtype=np.float64)
    y = np.where(X @ np.array(direction, dtype=np.float64) >= 0, 1.0, -1.0)
    w, trace, converged = _plain_batch(X, y, tie, limit)
    p = BatchPerceptron(tie=tie, passes=limit)
    got = p.learn_stream(sp.csr_matrix(X) if sparse else X, y)
    assert got.tolist() == trace and np.array_equal(p.w_, w) and p.converged_ == converged
    assert p.passes_ == len(trace) // len(X) and p.mistakes_ == sum(trace) and p.t_ == len(trace)


def test_the_batch_perceptron_is_the_perceptron_stopped_after_its_clean_pass() -> None:
    X, y = stream(seed=4, n=200, gamma=0.05)
    batch = BatchPerceptron(passes=1000)
    trace = batch.learn_stream(X, y)
    fixed = Perceptron(passes=batch.passes_)
    assert batch.converged_ and batch.passes_ > 2
    assert np.array_equal(fixed.learn_stream(X, y), trace) and np.array_equal(fixed.w_, batch.w_)  # same bits
    passes = trace.reshape(batch.passes_, -1).sum(axis=1)
    assert passes[-1] == 0 and (passes[:-1] > 0).all()  # it stopped at the first clean pass
    assert np.all(y * (X @ batch.w_) > 0)  # which classifies every example correctly


def test_the_pass_limit_stops_a_batch_that_has_not_converged() -> None:
    X, y = stream(seed=5, n=200, gamma=0.01)
    p = BatchPerceptron(passes=1)
    trace = p.learn_stream(X, y)
    assert p.passes_ == 1 and not p.converged_ and trace.sum() > 0 and trace.size == 200


@settings(max_examples=150, deadline=None)
@given(
    gamma=st.floats(2e-2, 1.0),
    ratio=st.floats(1.0, 10.0),
    n=st.integers(2, 300),
    d=st.integers(2, 20),
    seed=st.integers(0, 2**32 - 1),
    tie=TIE,
    limit=st.integers(1, 3000),
)
def test_the_batch_bounds_hold_on_generated_samples(gamma, ratio, n, d, seed, tie, limit) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=gamma, rho=gamma * ratio, n=n, d=d).generate(np.random.default_rng(seed))
    p = BatchPerceptron(tie=tie, passes=limit)
    trace = p.learn_stream(ds.X, ds.y)
    stats = ds.stats.as_dict() | {"T": trace.size, "pass_limit": limit}
    passes = BATCH_PASSES.evaluate(stats, {"passes_made": p.passes_})
    updates = NOVIKOFF.evaluate(stats, {"mistakes": p.mistakes_})
    assert passes["applicable"] and passes["holds"] and updates["holds"]
    assert passes["informative"] == (passes["theoretical"] < limit)
    if limit > passes["theoretical"]:  # a limit above the bound is never reached: the run converged
        assert p.converged_


def test_the_batch_passes_bound_needs_separable_data() -> None:
    ds = MarginBinary(gamma=0.1, rho=1.0, n=200, d=5, flip=0.2).generate(np.random.default_rng(6))
    p = BatchPerceptron(passes=20)
    p.learn_stream(ds.X, ds.y)
    row = BATCH_PASSES.evaluate(ds.stats.as_dict() | {"pass_limit": 20}, {"passes_made": p.passes_})
    assert not row["applicable"] and p.passes_ == 20 and not p.converged_
