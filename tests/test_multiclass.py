"""Multiclass learners: the kernel against its reference, Lemma 14.1 in every generated run (D), the
excess-risk bounds in the mean over seeds (E), and k = 2 against the binary machinery."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.bounds import bounds_for
from pipeline.bounds.multiclass import COR17_1, COR17_2, COR17_2_SHARP, LEMMA14_1, LEMMA14_1_RATE
from pipeline.data.multiclass import MulticlassMargin, largest_margin
from pipeline.learners import MulticlassPegasos, MulticlassSGD, MulticlassSVM, OneVsAll, Pegasos
from pipeline.learners.base import log_grid
from pipeline.learners.multiclass import MulticlassCore, MulticlassSteps, multiclass_step_kernel
from pipeline.job.statistics import measure, population_comparator


def _data(seed: int, k: int = 3, d: int = 5, gamma: float = 0.1, noise: float = 0.0, n: int = 200,  # noqa: ANN202
          n_test: int = 2000):
    return MulticlassMargin(k=k, gamma=gamma, rho=1.0, d=d, n=n, n_test=n_test, noise=noise).generate(
        np.random.default_rng(seed))


def _evaluate(ds, out, bound):  # noqa: ANN001, ANN202
    return bound.evaluate(ds.stats.as_dict() | out.stats, out.quantities)


@pytest.mark.parametrize(("lam", "radius"), [(0.0, 0.0), (0.1, 0.0), (0.1, 1.0 / math.sqrt(0.1)), (0.1, 0.5)])
def test_step_kernel_matches_reference(lam: float, radius: float) -> None:
    ds = _data(0)
    T = 300
    idx = np.random.default_rng(1).integers(0, ds.y.size, T)
    grid = log_grid(T, 8)
    outs = []
    for fn in (multiclass_step_kernel, multiclass_step_kernel.py):
        arrays = [np.zeros((3, 5)), np.zeros((3, 5)), 0.05, lam, radius, 1.0 - np.eye(3), 0, grid, np.empty((grid.size, 3, 5)),
                  np.empty(T), np.empty(T), np.empty(T, dtype=np.int8)]
        fn(ds.X, ds.y, idx, *arrays)
        outs.append(arrays)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("eta", "lam", "radius"), [(0.05, 0.0, 0.0), (0.0, 0.1, 0.0), (0.0, 0.1, 1.5)])
@pytest.mark.parametrize("cut", [1, 120])
def test_the_core_advanced_in_two_blocks_is_one_block_bit_for_bit(eta: float, lam: float, radius: float, cut: int) -> None:
    """MulticlassCore continues exactly: steps 1..cut then cut+1..T (t counted on, the snapshots into the same
    array) give every byte of one advance over 1..T, for SGD (lam = 0) and Pegasos with and without projection."""
    ds = _data(0)
    T = 300
    X, y = np.ascontiguousarray(ds.X, dtype=np.float64), np.ascontiguousarray(ds.y, dtype=np.int64)
    idx = np.random.default_rng(1).integers(0, y.size, T)
    grid = log_grid(T, 8)
    one = MulticlassCore.start(3, 5, eta=eta, lam=lam, radius=radius, cost="ordinal")
    whole = one.advance(X, y, idx, grid)
    two = MulticlassCore.start(3, 5, eta=eta, lam=lam, radius=radius, cost="ordinal")
    parts = MulticlassSteps.empty(T, grid.size, 3, 5)
    two.advance(X, y, idx[:cut], grid, MulticlassSteps(parts.avg, parts.loss[:cut], parts.vnorm2[:cut], parts.wrong[:cut]))
    two.advance(X, y, idx[cut:], grid, MulticlassSteps(parts.avg, parts.loss[cut:], parts.vnorm2[cut:], parts.wrong[cut:]))
    assert one.t == two.t == T
    for name in ("avg", "loss", "vnorm2", "wrong"):
        assert getattr(whole, name).tobytes() == getattr(parts, name).tobytes(), name
    assert one.W.tobytes() == two.W.tobytes() and one.Wsum.tobytes() == two.Wsum.tobytes()


def test_realisable_comparator_is_exactly_zero() -> None:
    from pipeline.risk import ghinge_losses

    ds = _data(2, gamma=0.05)
    comp = population_comparator(ds, B=20.0)
    assert comp["lower"] == 0.0 and comp["upper"] == 0.0
    assert ghinge_losses(ds.X_test, ds.y_test, ds.W_star / ds.gamma).max() == 0.0
    assert ds.stats.margin >= ds.gamma


def test_the_upper_comparator_is_a_confidence_limit_over_every_candidate() -> None:
    from pipeline.risk import ghinge_losses

    ds = _data(3, gamma=0.05, noise=0.2)
    W_bar = ds.W_star * 3.0
    comp = population_comparator(ds, B=2.0, extra={"Pi_B(W_bar)": W_bar})
    assert "95 % upper confidence limit" in comp["how"]
    # every candidate's held-out mean is below the limit (it is the smallest of their Bonferroni limits)
    means = [float(ghinge_losses(ds.X_test, ds.y_test, U).mean()) for U in (comp["U"], W_bar * 2.0 / np.linalg.norm(W_bar))]
    assert comp["upper"] > min(means) and comp["lower"] <= comp["upper"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(2, 5),
    d=st.integers(2, 6),
    gamma=st.sampled_from([0.02, 0.05, 0.15]),  # fractions of the largest margin the generator allows
    noise=st.sampled_from([0.0, 0.0, 0.1]),
    B=st.sampled_from([0.5, 3.0, 20.0]),
    T=st.integers(1, 500),
)
def test_lemma14_1_holds_in_every_run(seed, k, d, gamma, noise, B, T) -> None:  # noqa: ANN001
    ds = _data(seed % 1000, k=k, d=d, gamma=gamma * largest_margin(k, d, 1.0), noise=noise, n=60, n_test=1000)
    out = measure(MulticlassSGD(B=B, T=T), ds, np.random.default_rng(seed))
    for bound in (LEMMA14_1, LEMMA14_1_RATE):
        row = _evaluate(ds, out, bound)
        assert row["applicable"] and row["holds"], row
    t, regret = out.curves["regret"]
    curve = LEMMA14_1.curve_of(ds.stats.as_dict() | out.stats, t, out.steps)  # the curve the plots draw
    assert np.all(regret <= curve)  # every prefix, against the bound with its own rounding allowance


def test_the_plotted_lemma14_1_curve_is_the_judged_one_step_by_step() -> None:
    """The run's curves.parquet holds one bound/lemma14_1 curve, ||u||^2/(2 eta) + (eta/2) sum_(s<=t) ||v_s||^2
    at each t (docs/bounds.md section 7), not the final value drawn flat: it grows with the run's own ||v_t||^2
    and ends at the bound of the results table."""
    from pipeline.job.config import Job
    from pipeline.job.run import run

    job = Job(experiment="lemma14_1_curve", seed=0, learner=MulticlassSGD(B=3.0, T=300),
              dataset=MulticlassMargin(k=3, d=4, gamma=0.05, rho=1.0, n=200, n_test=2000))
    result = run(job)
    curve = result.curve[result.curve["quantity"] == "bound/lemma14_1"]
    regret = result.curve[result.curve["quantity"] == "regret"]
    row = result.table[result.table["bound"] == "lemma14_1"].iloc[0]
    values = curve["empirical"].to_numpy()
    assert curve["t"].tolist() == regret["t"].tolist()
    assert np.all(np.diff(values) >= 0) and values[-1] > values[0]  # sum_(s<=t) ||v_s||^2 grows: not flat
    assert values[-1] == row["theoretical"]  # at t = T, the table's bound itself
    assert np.all(regret["empirical"].to_numpy() <= values) and row["holds"]


def test_sgd_excess_risk_is_below_the_bound_in_the_mean_over_seeds() -> None:
    ds = _data(3, k=4, d=6, gamma=0.1, n=200, n_test=20_000)
    B, T = 10.0, 3000
    rows = {b.name: [] for b in (COR17_2, COR17_2_SHARP)}
    for seed in range(10):
        out = measure(MulticlassSGD(B=B, T=T), ds, np.random.default_rng(seed))
        for b in (COR17_2, COR17_2_SHARP):
            rows[b.name].append(_evaluate(ds, out, b))
    for name, rs in rows.items():
        values = np.array([r["empirical"] for r in rs])
        half = 2.262 * values.std(ddof=1) / math.sqrt(values.size)
        assert values.mean() + half <= rs[0]["theoretical"], (name, values.mean(), half, rs[0]["theoretical"])
    assert rows["cor17_2_sharp"][0]["theoretical"] < rows["cor17_2"][0]["theoretical"]


def test_multiclass_svm_is_certified_and_below_its_bound() -> None:
    ds = _data(4, k=3, d=4, gamma=0.1, n=300, n_test=5000)
    out = measure(MulticlassSVM(B=10.0), ds, np.random.default_rng(0))
    assert out.stats["dual_gap"] <= 1e-6
    row = _evaluate(ds, out, COR17_1)
    assert row["applicable"] and row["empirical"] <= row["theoretical"]


@pytest.mark.parametrize("projection", [False, True])
def test_multiclass_pegasos_with_two_classes_is_binary_pegasos(projection: bool) -> None:
    """k = 2: W_0 = -W_1 throughout, w = W_1 - W_0 follows binary Pegasos with lam/2 on the same stream,
    and both certified optima coincide (docs/bounds.md section 8). With projection too: ||W|| <= 1/sqrt(lam)
    is ||w|| = sqrt(2) ||W|| <= 1/sqrt(lam/2), binary Pegasos's ball."""
    from pipeline.data.certify import Stats
    from pipeline.data.dataset import Dataset

    ds = _data(5, k=2, d=4, noise=0.1, n=150)
    lam, T = 0.02, 2000
    mc = MulticlassPegasos(lam=lam, T=T, projection=projection)
    out_mc = measure(mc, ds, np.random.default_rng(9))
    binary = Dataset("binary", ds.X, 2.0 * ds.y - 1.0, Stats(m=150, d=4, R=ds.stats.R, gamma_lo=math.nan,
                                                              gamma_hi=math.nan, separable=False, gap=math.nan))
    pg = Pegasos(lam=lam / 2, T=T, projection=projection)
    out_bin = measure(pg, binary, np.random.default_rng(9))
    assert out_mc.stats["c"] / lam == pytest.approx(out_bin.stats["c"] / (lam / 2), rel=1e-12)  # the same rate c / lam
    np.testing.assert_array_equal(mc.W_[0], -mc.W_[1])
    np.testing.assert_allclose(mc.W_[1] - mc.W_[0], pg.w_, rtol=0, atol=1e-10 * max(1.0, np.abs(pg.w_).max()))
    np.testing.assert_allclose(mc.W_bar_[1] - mc.W_bar_[0], pg.w_bar_, rtol=0, atol=1e-10 * max(1.0, np.abs(pg.w_).max()))
    assert out_mc.stats["f_star_lo"] == pytest.approx(out_bin.stats["f_star_lo"], abs=1e-6)
    assert out_mc.quantities["suboptimality"] == pytest.approx(out_bin.quantities["suboptimality"], abs=1e-6)
    for bound in bounds_for("multiclass_pegasos"):
        row = _evaluate(ds, out_mc, bound)
        assert row["holds"] is not False or bound.guarantee != "D", row


def test_one_vs_all_judges_every_subproblem() -> None:
    from pipeline.job.config import Job
    from pipeline.job.run import run

    class _Spec:  # the dataset generator the run loop calls
        name = "multiclass_margin"

        def get_params(self) -> dict:
            return {"k": 3}

        def generate(self, rng: np.random.Generator):  # noqa: ANN202
            return _data(6, k=3, n=200)

    job = Job(experiment="t", seed=0, learner=OneVsAll(lam=0.01, T=1000), dataset=_Spec())
    table = run(job).table
    assert set(table["part"]) == {"class 0", "class 1", "class 2"}
    regret = table[table["bound"] == "ova_regret"]
    assert len(regret) == 3 and regret["holds"].all()


@pytest.mark.parametrize(("rows", "k", "says"), [
    ("1,2,0\n3,4,1\n5,6,3\n", 3, "label 3 at row 2 is outside 0..2"),
    ("1,2,0\n3,4,1\n5,6,1\n", 3, "class 2 of 0..2 has no examples"),
    ("1,2,0.5\n3,4,1\n", 2, "label 0.5 is not an integer"),
])
def test_bad_multiclass_files_are_one_line(tmp_path, capsys, rows: str, k: int, says: str) -> None:  # noqa: ANN001
    from pipeline.sweep.preflight import preflight
    from pipeline.sweep.schemas import register

    path = tmp_path / "labels.csv"
    path.write_text(rows)
    register()
    with pytest.raises(SystemExit) as exit_:
        preflight(["algorithm=multiclass_sgd", "dataset=multiclass_file", f"dataset.path={path}", f"k={k}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and says in err and "dataset.path=" in err, err


def test_binary_learner_on_multiclass_data_is_refused() -> None:
    from pipeline.job.config import Job
    from pipeline.learners import Perceptron
    from pipeline.params import UserError
    from pipeline.job.run import prepare

    class _Spec:
        name = "multiclass_margin"

        def get_params(self) -> dict:
            return {}

        def generate(self, rng: np.random.Generator):  # noqa: ANN202
            return _data(0)

    with pytest.raises(UserError, match="binary learner"):
        prepare(Job(experiment="t", seed=0, learner=Perceptron(), dataset=_Spec()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 5), lam=st.sampled_from([1.0, 0.1, 0.01]),
       T=st.integers(1, 400), noise=st.sampled_from([0.0, 0.1]))
def test_projected_multiclass_pegasos_stays_in_the_ball_and_within_lemma_1(seed, k, lam, T, noise) -> None:  # noqa: ANN001
    ds = _data(seed % 1000, k=k, d=4, noise=noise, n=60)
    mc = MulticlassPegasos(lam=lam, T=T, projection=True)
    out = measure(mc, ds, np.random.default_rng(seed))
    radius = 1.0 / math.sqrt(lam)
    assert np.linalg.norm(mc.W_) <= radius * (1 + 1e-12) and np.linalg.norm(mc.W_bar_) <= radius * (1 + 1e-12)
    regret = next(b for b in bounds_for("multiclass_pegasos") if b.name == "mc_regret")
    row = _evaluate(ds, out, regret)
    assert row["applicable"] and row["holds"], row


# --- Unregularised biases (algorithm.intercept) ----------------------------------------------------------------


def _biased_reference(X, y, idx, k, lam, radius, cost):  # noqa: ANN001, ANN202
    """Multiclass Pegasos with biases b written out step by step, in the kernel's order of operations."""
    d = X.shape[1]
    W, b = [[0.0] * d for _ in range(k)], [0.0] * k
    Wsum, bsum = [[0.0] * d for _ in range(k)], [0.0] * k
    loss = []
    for r, i in enumerate(idx):
        t, yi = r + 1, int(y[i])
        scores, norm2 = [], 0.0
        for j in range(k):
            s = b[j]
            bsum[j] += b[j]
            for c in range(d):
                Wsum[j][c] += W[j][c]
                s += W[j][c] * X[i, c]
                norm2 += W[j][c] * W[j][c]
            scores.append(s)
        best, value = yi, 0.0
        for j in range(k):
            if j != yi and cost[j, yi] + scores[j] - scores[yi] > value:
                best, value = j, cost[j, yi] + scores[j] - scores[yi]
        loss.append(0.5 * lam * norm2 + value)
        step, shrink = 1.0 / (lam * t), 1.0 - 1.0 / t
        W = [[w * shrink for w in row] for row in W]
        if best != yi:
            for c in range(d):
                W[best][c] -= step * X[i, c]
                W[yi][c] += step * X[i, c]
            b[best] -= step
            b[yi] += step
        after = sum(w * w for row in W for w in row)
        if radius > 0 and after > radius * radius:
            W = [[w * (radius / math.sqrt(after)) for w in row] for row in W]
    T = len(idx)
    return (np.array(W), np.array(b), np.array(Wsum) / T, np.array(bsum) / T, np.array(loss))


@pytest.mark.parametrize(("projection", "cost"), [(False, "zero_one"), (True, "absolute")])
def test_multiclass_pegasos_with_biases_is_the_written_out_rule_bit_for_bit(projection: bool, cost: str) -> None:
    from pipeline.learners.pegasos import index_stream
    from pipeline.risk import cost_matrix

    ds = MulticlassMargin(k=3, n=60, d=4, gamma=0.1, rho=1.0, noise=0.1).generate(np.random.default_rng(0))
    learner = MulticlassPegasos(lam=0.1, T=300, projection=projection, cost=cost, intercept=True)
    out = learner.run(ds, np.random.default_rng(1))
    idx = index_stream("iid", np.ones(ds.y.size), 300, 1, np.random.default_rng(1))[:, 0]
    radius = math.sqrt(cost_matrix(cost, 3).max()) / math.sqrt(0.1) if projection else 0.0
    W, b, Wbar, bbar, loss = _biased_reference(ds.X, ds.y, idx, 3, 0.1, radius, cost_matrix(cost, 3))
    np.testing.assert_array_equal(learner.W_, W)
    np.testing.assert_array_equal(learner.b_, b)
    np.testing.assert_array_equal(learner.W_bar_, Wbar)
    np.testing.assert_array_equal(learner.b_bar_, bbar)
    np.testing.assert_array_equal(out.trace["loss"], loss)
    assert np.any(b != 0.0)


def test_multiclass_pegasos_with_biases_reports_every_bound_not_applicable() -> None:
    from pipeline.bounds import bounds_for
    from pipeline.learners.multiclass import NO_BOUND_WITH_BIASES
    from pipeline.job.statistics import measure

    ds = MulticlassMargin(k=3, n=100, d=4, gamma=0.1, rho=1.0).generate(np.random.default_rng(0))
    learner = MulticlassPegasos(lam=0.1, T=500, intercept=True)
    out = measure(learner, ds, np.random.default_rng(1))
    stats = ds.stats.as_dict() | out.stats
    rows = [b.evaluate(stats, out.quantities, out.steps) for b in bounds_for("multiclass_pegasos")]
    assert rows and all(not r["applicable"] and r["reason"] == NO_BOUND_WITH_BIASES for r in rows)
    assert 0.0 <= out.stats["risk_01"] <= 1.0
    # every step moves b_yhat down and b_y up by the same amount: the biases keep summing to 0
    assert abs(learner.b_.sum()) <= 1e-12 * np.abs(learner.b_).max()
