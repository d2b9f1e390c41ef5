"""Halving and Weighted Majority (docs/bounds.md section 3): kernels against their references, the three
bounds over hypothesis-generated streams, the bisecting adversary reaching Halving's bound exactly,
|H| as distinct functions, and the refusals (a class too large to tabulate, a non-realisable stream)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from helpers import migrated_store
from hypothesis import strategies as st

from pipeline.bounds import bounds_for
from pipeline.bounds.finite import HALVING, RANDOMIZED_WEIGHTED_MAJORITY, WEIGHTED_MAJORITY
from pipeline.data import Dataset, MarginBinary
from pipeline.data.finite import CLASSES, FiniteClass, class_size, distinct_rows
from pipeline.learners.halving import Halving, WeightedMajority, halving_kernel, weighted_majority_kernel
from pipeline.params import ParamError, UserError

# sizes small enough for hundreds of examples per test
SMALL = {"thresholds": st.integers(1, 60), "intervals": st.integers(1, 25), "conjunctions": st.integers(1, 6),
         "linear": st.integers(1, 80)}


@st.composite
def finite_streams(draw, adversary=st.sampled_from(["random", "bisect"]), flip=st.just(0.0)):  # noqa: ANN001, ANN201, B008
    cls = draw(st.sampled_from(CLASSES))
    gen = FiniteClass(cls=cls, size=draw(SMALL[cls]), n=draw(st.integers(1, 150)), adversary=draw(adversary),
                      flip=draw(flip))
    return gen, gen.sample(np.random.default_rng(draw(st.integers(0, 2**32 - 1))))


def FakeTable(table: np.ndarray, y: np.ndarray) -> Dataset:  # noqa: N802
    """A stream given only by its class's table (no points, no statistics)."""
    return Dataset("table", np.zeros((len(y), 1)), np.asarray(y, dtype=np.float64), None, hypotheses=table)


def random_table(rng: np.random.Generator, H: int, m: int, duplicates: int) -> np.ndarray:
    table = np.where(rng.random((H, m)) < rng.uniform(0.1, 0.9), 1, -1).astype(np.int8)
    if duplicates:  # repeated rows must not count twice
        table = np.vstack([table, table[rng.integers(0, H, duplicates)]])
    return table[rng.permutation(len(table))]


def evaluate(bound, learner, dataset, seed: int = 0) -> dict:  # noqa: ANN001
    out = learner.run(dataset, np.random.default_rng(seed))
    return bound.evaluate(out.stats, out.quantities) | {"stats": out.stats}


# --- kernels against their plain-Python references -------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_halving_kernel_equals_the_plain_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = random_table(rng, 40, 120, 0)
    y = table[3].copy() if seed % 2 == 0 else np.where(rng.random(120) < 0.5, 1, -1).astype(np.int8)  # realisable or not
    runs = []
    order = np.arange(120) if seed < 2 else rng.permutation(120)  # as given, or in another order
    for f in (halving_kernel, halving_kernel.py):
        alive, trace = np.ones(40, dtype=np.bool_), np.zeros(120, dtype=np.int8)
        runs.append((f(np.ascontiguousarray(table.T), y, order, alive, trace), alive, trace))
    (c1, a1, t1), (c2, a2, t2) = runs
    assert c1 == c2 == t1.sum() and np.array_equal(a1, a2) and np.array_equal(t1, t2)


@pytest.mark.parametrize("log_factor", [-math.inf, math.log(0.5), math.log(0.999), -0.05, 0.0])
def test_weighted_majority_kernel_equals_the_plain_reference(log_factor: float) -> None:
    rng = np.random.default_rng(7)
    table = random_table(rng, 30, 200, 0)
    y = np.where(rng.random(200) < 0.5, 1, -1).astype(np.int8)
    runs = []
    for f in (weighted_majority_kernel, weighted_majority_kernel.py):
        losses, trace, probs = np.zeros(30, dtype=np.int64), np.zeros(200, dtype=np.int8), np.zeros(200)
        runs.append((f(np.ascontiguousarray(table.T), y, log_factor, losses, trace, probs), losses, trace, probs))
    (c1, l1, t1, p1), (c2, l2, t2, p2) = runs
    assert c1 == c2 == t1.sum() and np.array_equal(l1, l2) and np.array_equal(t1, t2)
    np.testing.assert_allclose(p1, p2, rtol=1e-14, atol=0)
    assert np.array_equal(l1, (table != y[None, :]).sum(axis=1))  # the losses are each expert's mistakes


def test_weighted_majority_at_beta_zero_is_halving_on_realisable_streams() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        table = random_table(rng, 50, 100, 5)
        table = table[distinct_rows(table)]
        y = table[int(rng.integers(len(table)))]
        h, wm = Halving(), WeightedMajority(beta=0.0)
        assert np.array_equal(h.learn_table(table, y), wm.learn_table(table, y)[0])


# --- the bounds over generated streams -------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(stream=finite_streams())
def test_halving_bound_holds_on_finite_class_streams(stream) -> None:  # noqa: ANN001
    gen, ds = stream
    Halving().check_data(ds)  # both adversaries keep the stream realisable
    row = evaluate(HALVING, Halving(), ds)
    assert row["applicable"] and row["holds"], (row["empirical"], row["theoretical"])
    assert row["stats"]["H"] == len(np.unique(ds.hypotheses, axis=0)) <= class_size(gen.cls, gen._size())


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), H=st.integers(1, 200), m=st.integers(1, 150), duplicates=st.integers(0, 50))
def test_halving_bound_holds_on_any_realisable_table(seed, H, m, duplicates) -> None:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    table = random_table(rng, H, m, duplicates)
    y = table[int(rng.integers(len(table)))].astype(np.float64)
    h = Halving()
    trace = h.learn_table(table[distinct_rows(table)], y)
    distinct = len(np.unique(table, axis=0))
    assert trace.sum() <= math.floor(math.log2(distinct))
    assert HALVING.evaluate({"H": distinct, "m_star": 0, "T": trace.size}, {"mistakes": int(trace.sum())})["holds"]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), H=st.integers(1, 120), m=st.integers(1, 300), duplicates=st.integers(0, 20),
       beta=st.one_of(st.just(0.0), st.floats(0.0, 0.999999), st.just(0.5)), noise=st.floats(0.0, 0.6))
def test_deterministic_weighted_majority_bound_holds_on_any_stream(seed, H, m, duplicates, beta, noise) -> None:  # noqa: ANN001
    """The statement holds for arbitrary labels: a planted expert with noise, or pure noise."""
    rng = np.random.default_rng(seed)
    table = random_table(rng, H, m, duplicates)
    y = np.where(rng.random(m) < noise, -1, 1) * table[int(rng.integers(len(table)))]
    ds = FakeTable(table, y)
    row = evaluate(WEIGHTED_MAJORITY, WeightedMajority(beta=beta), ds)
    s = row["stats"]
    assert s["m_star"] == (table != y[None, :]).sum(axis=1).min() and s["H"] == len(np.unique(table, axis=0))
    if beta == 0 and s["m_star"] > 0:
        assert not row["applicable"] and "beta = 0" in row["reason"]
    else:
        assert row["applicable"] and row["holds"], (row["empirical"], row["theoretical"], beta)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), H=st.integers(1, 120), m=st.integers(1, 400), duplicates=st.integers(0, 20),
       noise=st.floats(0.0, 0.6))
def test_randomized_weighted_majority_bound_holds_on_any_stream(seed, H, m, duplicates, noise) -> None:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    table = random_table(rng, H, m, duplicates)
    y = np.where(rng.random(m) < noise, -1, 1) * table[int(rng.integers(len(table)))]
    wm = WeightedMajority(randomized=True)
    row = evaluate(RANDOMIZED_WEIGHTED_MAJORITY, wm, FakeTable(table, y))
    s = row["stats"]
    probs = wm.learn_table(table[distinct_rows(table)], y)[1]
    assert row["empirical"] == pytest.approx(probs.sum() - s["m_star"], abs=1e-9)
    if m <= 2 * math.log(s["H"]):
        assert not row["applicable"] and "2 ln|H|" in row["reason"]
    else:
        assert row["applicable"] and row["holds"], (row["empirical"], row["theoretical"])


@settings(max_examples=200, deadline=None)
@given(stream=finite_streams(flip=st.floats(0.0, 0.45)), beta=st.floats(0.0, 0.99), randomized=st.booleans())
def test_weighted_majority_bounds_hold_on_noisy_finite_class_streams(stream, beta, randomized) -> None:  # noqa: ANN001
    _, ds = stream
    wm = WeightedMajority(beta=beta, randomized=randomized)
    out = wm.run(ds, np.random.default_rng(0))
    rows = [b.evaluate(out.stats, out.quantities) for b in bounds_for("weighted_majority")]
    assert all(r["holds"] for r in rows if r["applicable"]), rows
    assert sum(r["applicable"] for r in rows) <= 1  # one bound per mode


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 200), d=st.integers(2, 10), gamma=st.floats(0.01, 0.5), seed=st.integers(0, 2**32 - 1),
       experts=st.integers(0, 60))
def test_halving_on_margin_data_uses_random_directions_and_w_star(n, d, gamma, seed, experts) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=gamma, rho=1.0, n=n, d=d).generate(np.random.default_rng(seed))
    h = Halving(experts=experts)
    h.check_data(ds)  # w* realises clean margin data
    row = evaluate(HALVING, h, ds, seed)
    assert row["applicable"] and row["holds"] and 1 <= row["stats"]["H"] <= experts + 1


# --- the bisecting adversary ------------------------------------------------------------------------


@pytest.mark.parametrize("N", [1, 2, 3, 4, 7, 8, 15, 16, 31, 100, 255, 256, 1000])
def test_bisecting_adversary_forces_the_halving_bound_on_thresholds(N: int) -> None:
    for seed in range(3):
        ds = FiniteClass(cls="thresholds", size=N, n=N + seed, adversary="bisect").sample(np.random.default_rng(seed))
        row = evaluate(HALVING, Halving(), ds)
        assert row["stats"]["H"] == N + 1
        assert row["empirical"] == row["theoretical"] == math.floor(math.log2(N + 1)) and row["ratio"] == 1.0


@pytest.mark.parametrize("n", [1, 5, 20, 63])
def test_bisecting_adversary_on_a_sample_smaller_than_the_domain(n: int) -> None:
    """n < N points: |H| counts the n + 1 functions thresholds make on them, and the bound is still reached."""
    ds = FiniteClass(cls="thresholds", size=500, n=n, adversary="bisect").sample(np.random.default_rng(n))
    row = evaluate(HALVING, Halving(), ds)
    assert row["stats"]["H"] == n + 1 and row["empirical"] == row["theoretical"] == math.floor(math.log2(n + 1))


def test_bisecting_adversary_on_conjunctions_need_not_reach_the_bound() -> None:
    ds = FiniteClass(cls="conjunctions", size=6, n=64, adversary="bisect").sample(np.random.default_rng(0))
    row = evaluate(HALVING, Halving(), ds)
    assert row["stats"]["H"] == 3**6 + 1 and row["holds"] and row["theoretical"] == 9
    assert 1 <= row["empirical"] <= 9  # Littlestone dimension, not log2 |H|, is the adversary's limit


# --- |H|: distinct functions on the presented sample ------------------------------------------------


@pytest.mark.parametrize(("cls", "size"), [("thresholds", 40), ("intervals", 12), ("conjunctions", 5), ("linear", 30)])
def test_class_tables_have_the_stated_sizes(cls: str, size: int) -> None:
    gen = FiniteClass(cls=cls, size=size, n=400, adversary="bisect")
    ds = gen.sample(np.random.default_rng(0))
    assert ds.hypotheses.shape == (class_size(cls, size), 400)
    if cls != "linear":  # the sample covers the finite domain: every function of the class is distinct on it
        assert len(distinct_rows(ds.hypotheses)) == class_size(cls, size)
    # every hypothesis is the homogeneous separator the features promise (so the Perceptron sees the same stream)
    w = gen._separator(gen._hypotheses())
    margins = ds.X @ w.T
    assert np.all(margins != 0) and np.array_equal(np.where(margins > 0, 1, -1).T, ds.hypotheses)


def test_distinct_rows_agrees_with_numpy_unique() -> None:
    rng = np.random.default_rng(1)
    for H, m in [(1, 1), (5, 3), (200, 7), (300, 70), (64, 9)]:
        table = random_table(rng, H, m, H // 2)
        first = distinct_rows(table)
        assert len(first) == len(np.unique(table, axis=0)) and len(np.unique(table[first], axis=0)) == len(first)


def test_learners_count_distinct_functions_on_the_sample() -> None:
    points = np.array([3, 3, 10, 10, 10, 25])  # 3 distinct points: thresholds make 4 functions on them
    gen = FiniteClass(cls="thresholds", size=40, n=len(points))
    table = gen._table(gen._hypotheses(), points)
    ds = FakeTable(table, table[12])
    for learner in (Halving(), WeightedMajority(), WeightedMajority(randomized=True)):
        assert learner.run(ds, np.random.default_rng(0)).stats["H"] == 4


# --- refusals ------------------------------------------------------------------------------------------


def test_too_large_a_class_is_refused_at_validation() -> None:
    with pytest.raises(ParamError, match=r"size=13: must be at most 9 for cls=conjunctions with n=1000"):
        FiniteClass(cls="conjunctions", size=13, n=1000).check()
    with pytest.raises(ParamError, match=r"size=400: must be at most 315 for cls=intervals"):
        FiniteClass(cls="intervals", size=400, n=1000).check()
    FiniteClass(cls="conjunctions", size=9, n=1000).check()  # the largest that fits


def test_too_large_a_class_fails_preflight_in_one_line(capsys: pytest.CaptureFixture) -> None:
    from pipeline.sweep.preflight import preflight
    from pipeline.sweep.schemas import register

    register()
    with pytest.raises(SystemExit) as exit_:
        preflight(["algorithm=halving", "dataset=finite_class", "dataset.cls=conjunctions", "dataset.size=12"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "dataset.size=12: must be at most 9" in err, err


def test_non_realisable_stream_is_refused_by_check_data() -> None:
    ds = FiniteClass(cls="thresholds", size=512, n=1000, flip=0.1).sample(np.random.default_rng(0))
    with pytest.raises(UserError) as e:
        Halving().check_data(ds)
    message = str(e.value)
    assert "\n" not in message and "not realisable" in message and "weighted_majority" in message
    assert f"|H| = {len(distinct_rows(ds.hypotheses))}" in message
    WeightedMajority().check_data(ds)  # the noisy stream is Weighted Majority's case
    noisy = MarginBinary(gamma=0.1, rho=1.0, n=300, d=5, flip=0.2).generate(np.random.default_rng(0))
    with pytest.raises(UserError, match="not realisable"):
        Halving().check_data(noisy)


# --- end to end ---------------------------------------------------------------------------------------


@pytest.mark.slow  # what the installed command prints and exits with
def test_non_realisable_stream_from_the_command_line_is_one_line(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    proc = boundlab("algorithm=halving", "dataset=finite_class", "dataset.flip=0.1", f"hydra.run.dir={tmp_path / 'run'}",
                    cwd=tmp_path, env=env)
    lines = [ln for ln in proc.stderr.splitlines() if "mlflow.store" not in ln]  # mlflow's first-use notice
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(lines) == 1 and "not realisable" in lines[0], proc.stderr


def _multirun(tmp_path: Path, boundlab, *args: str) -> pd.DataFrame:  # noqa: ANN001
    env = {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(tmp_path / "mlflow.db")}
    sweep = tmp_path / "sweep"
    proc = boundlab("-m", *args, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pd.read_parquet(sweep / "results.parquet")


@pytest.mark.e2e
def test_multirun_on_margin_data(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    table = _multirun(tmp_path, boundlab_in_process, "algorithm=halving,weighted_majority", "seed=0,1", "n=200", "d=5")
    assert set(table["learner"]) == {"halving", "weighted_majority"} and table["run"].nunique() == 4
    applicable = table[table["applicable"].astype(bool)]
    assert set(applicable["bound"]) == {"halving", "weighted_majority"} and applicable["holds"].all()
    assert (tmp_path / "sweep" / "halving_measured_vs_bound.png").exists()


@pytest.mark.e2e  # a 2-job sweep through the command
def test_multirun_on_finite_classes(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    table = _multirun(tmp_path, boundlab_in_process, "algorithm=halving", "dataset=finite_class",
                      "dataset.cls=thresholds,conjunctions", "dataset.adversary=bisect", "n=300")
    assert len(table) == 2 and table["applicable"].all() and table["holds"].all()
    table = table.set_index("cls")
    # 300 of the 1000 grid points: 301 thresholds on them, and the adversary forces floor(log2 301) = 8
    assert table.loc["thresholds", "empirical"] == table.loc["thresholds", "theoretical"] == 8
    assert table.loc["thresholds", "comparator"] == "|H| = 301"
    assert table.loc["conjunctions", "comparator"] == f"|H| = {3**8 + 1}"  # n = 300 covers the 2^8 points
