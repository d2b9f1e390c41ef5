"""The orderings of a fixed sample (pipeline.learners.orderings): given, random, adversarial.

The adversary is checked against truth: brute force over all n! orders of small samples gives the true
worst case, which the search must reach on most instances; it never presents an ordering the theorems
exclude (a permutation of the sample, the same for every pass); it never has fewer mistakes than the given
or the random order; and Novikoff's bound holds under it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.bounds import NOVIKOFF
from pipeline.data import MarginBinary
from pipeline.learners import BatchPerceptron, Perceptron
from pipeline.learners.orderings import greedy_order, worst_order
from pipeline.learners.perceptron import TIES
from pipeline.params import ParamError
from helpers import small_separable

LEARNERS = [(Perceptron, {"passes": 3}), (BatchPerceptron, {})]


def _mistakes(cls: type, kw: dict, X: np.ndarray, y: np.ndarray):  # noqa: ANN202
    def evaluate(order: np.ndarray) -> int:
        learner = cls(**kw)
        learner.learn_stream(X[order], y[order])
        return learner.mistakes_
    return evaluate


@pytest.mark.parametrize(("cls", "kw"), LEARNERS, ids=["perceptron", "batch"])
def test_the_search_reaches_the_brute_force_worst_case_on_most_small_samples(cls: type, kw: dict) -> None:
    """Measured when written: 28 of 30 instances (n = 7 and 8) for each learner; 12 instances of 6 and 7 here."""
    reached = 0
    for seed in range(12):
        X, y = small_separable(seed, 6 + seed % 2)
        evaluate = _mistakes(cls, kw, X, y)
        _, truth = worst_order(evaluate, len(y))
        found = cls(ordering="adversarial", **kw).order(X, y, np.random.default_rng(seed))
        got = evaluate(found)
        assert got <= truth  # brute force is the truth: nothing beats it
        reached += got == truth
    assert reached >= 10, f"the search reached the worst case on {reached} of 12 samples"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 120), gamma=st.floats(0.02, 0.5),
       tie=st.sampled_from(sorted(TIES)), batch=st.booleans())
def test_the_adversary_reorders_and_never_does_worse_than_the_given_or_random_order(seed, n, gamma, tie, batch) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=gamma, rho=1.0, n=n, d=5).generate(np.random.default_rng(seed))
    cls, kw = (BatchPerceptron, {}) if batch else (Perceptron, {"passes": 2})
    runs = {o: cls(ordering=o, tie=tie, **kw).run(ds, np.random.default_rng(seed + 1))
            for o in ("given", "random", "adversarial")}
    order = cls(ordering="adversarial", tie=tie, **kw).order(ds.X, ds.y, np.random.default_rng(seed + 1))
    assert np.array_equal(np.sort(order), np.arange(n))  # a permutation of the sample: what the theorem allows
    mistakes = {o: r.quantities["mistakes"] for o, r in runs.items()}
    assert mistakes["adversarial"] >= max(mistakes["given"], mistakes["random"])
    trace = runs["adversarial"].trace["mistake"]
    stats = ds.stats.as_dict() | {"T": trace.size}
    assert NOVIKOFF.evaluate(stats, {"mistakes": mistakes["adversarial"]})["holds"]


def test_every_pass_presents_the_same_permutation() -> None:
    """A run under an ordering equals the Perceptron on the sample permuted once, pass after pass, bit for bit."""
    ds = MarginBinary(gamma=0.05, rho=1.0, n=150, d=8).generate(np.random.default_rng(3))
    for ordering in ("random", "adversarial"):
        learner = Perceptron(ordering=ordering, passes=3)
        order = learner.order(ds.X, ds.y, np.random.default_rng(7))
        trace = Perceptron(ordering=ordering, passes=3).run(ds, np.random.default_rng(7)).trace["mistake"]
        plain = Perceptron(passes=3)
        assert np.array_equal(plain.learn_stream(ds.X[order], ds.y[order]), trace)


@pytest.mark.parametrize("n", [3, 6, 20])
def test_on_the_tight_construction_every_order_attains_the_bound(n: int) -> None:
    """x_t = rho e_t: every step is a tie and a mistake whatever the order, so the worst case is n = the bound."""
    from pipeline.data.tight import Tight

    ds = Tight(n=n, rho=2.0).generate(np.random.default_rng(0))
    run = Perceptron(ordering="adversarial", passes=2).run(ds, np.random.default_rng(0))
    assert run.quantities["mistakes"] == n == NOVIKOFF.value(ds.stats.as_dict())
    if n <= 6:
        assert worst_order(_mistakes(Perceptron, {"passes": 2}, ds.X, ds.y), n)[1] == n


@pytest.mark.parametrize("tie", sorted(TIES))
def test_the_greedy_order_presents_the_most_wrong_example_first(tie: str) -> None:
    """Its first example is the lowest y w.x under w = 0 (a tie: the first row), and each next one is the
    lowest under the weights after the examples before it (checked by recomputing every score)."""
    X, y = small_separable(11, 30)
    order = greedy_order(X, y, tie)
    assert np.array_equal(np.sort(order), np.arange(30))
    w, shown = np.zeros(X.shape[1]), np.zeros(30, dtype=bool)
    for i in order:
        scores = np.where(shown, np.inf, y * (X @ w))
        assert scores[i] <= scores.min() + 1e-9
        shown[i] = True
        s = y[i] * (X[i] @ w)
        if s < 0 or s == 0 and (tie == "mistake" or (tie == "negative") == (y[i] > 0)):
            w = w + y[i] * X[i]


def test_a_stream_is_read_in_its_order() -> None:
    from types import SimpleNamespace

    with pytest.raises(ParamError, match=r"algorithm.ordering='random': must be given on dataset=stream"):
        Perceptron(ordering="random").check_data(SimpleNamespace(kind="stream"))
    with pytest.raises(ParamError, match="ordering='worst': must be one of given, random, adversarial"):
        Perceptron(ordering="worst").check()


def test_the_scikit_learn_adapter_reorders_the_sample_it_is_fitted_on() -> None:
    from pipeline.estimators import PerceptronClassifier

    ds = MarginBinary(gamma=0.05, rho=1.0, n=200, d=6).generate(np.random.default_rng(8))
    est = PerceptronClassifier(ordering="adversarial", passes=2, random_state=4).fit(ds.X, ds.y)
    order = Perceptron(ordering="adversarial", passes=2).order(ds.X, ds.y, np.random.default_rng(4))
    plain = Perceptron(passes=2)
    plain.learn_stream(ds.X[order], ds.y[order])
    assert np.array_equal(est.learner_.w_, plain.w_) and est.learner_.mistakes_ >= Perceptron(passes=2).run(
        ds, np.random.default_rng(0)).quantities["mistakes"]
    with pytest.raises(ValueError, match="reorders a whole sample: use fit"):
        est.partial_fit(ds.X, ds.y)


# --- Halving: the same search over its orders (docs/bounds.md section 3) --------------------------------

def _halving_mistakes(table: np.ndarray, y: np.ndarray):  # noqa: ANN202
    from pipeline.learners import Halving

    return lambda order: int(Halving().learn_table(table[:, order], y[order]).sum())


@pytest.mark.parametrize("cls", ["thresholds", "intervals"])
def test_halving_search_reaches_the_brute_force_worst_case(cls: str) -> None:
    """Measured when written: 20 of 20 samples of 7 points (thresholds and intervals of 16)."""
    from pipeline.data.finite import FiniteClass
    from pipeline.learners import Halving

    reached = 0
    for seed in range(8):
        ds = FiniteClass(cls=cls, size=16, n=7, adversary="random").sample(np.random.default_rng(seed))
        table, y = Halving().table(ds, np.random.default_rng(0)), np.asarray(ds.y)
        _, truth = worst_order(_halving_mistakes(table, y), len(y))
        run = Halving(ordering="adversarial").run(ds, np.random.default_rng(seed))
        assert run.quantities["mistakes"] <= truth <= int(np.log2(run.stats["H"]))  # the theorem caps the truth
        reached += run.quantities["mistakes"] == truth
    assert reached >= 7, f"the search reached the worst case on {reached} of 8 samples"


@pytest.mark.parametrize("cls", ["thresholds", "intervals", "conjunctions"])
def test_halving_orderings_never_beat_the_bound_and_the_adversary_never_does_worse(cls: str) -> None:
    from pipeline.data.finite import FiniteClass
    from pipeline.learners import Halving

    for adversary in ("random", "bisect"):
        ds = FiniteClass(cls=cls, size=8, n=120, adversary=adversary).sample(np.random.default_rng(1))
        runs = {o: Halving(ordering=o).run(ds, np.random.default_rng(2)) for o in ("given", "random", "adversarial")}
        m = {o: r.quantities["mistakes"] for o, r in runs.items()}
        bound = int(np.log2(runs["given"].stats["H"]))
        assert max(m["given"], m["random"]) <= m["adversarial"] <= bound
        assert {r.stats["H"] for r in runs.values()} == {runs["given"].stats["H"]}  # |H| does not depend on the order
        if adversary == "bisect" and cls == "thresholds":  # the bisecting adversary is the known worst case
            assert m["given"] == m["adversarial"] == bound
