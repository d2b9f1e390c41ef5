"""The exact worst case and the adaptive adversary inside the pipeline (docs/bounds.md section 1): the certified
worst instance as a dataset, replayed to its value with its certificate in the row; the adaptive ordering of the
online Perceptron, its rounds and the statistics summed over them; and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from pipeline.paths import CONF_DIR
from pipeline.job.config import build
from pipeline.data.worst_case import WorstCase
from pipeline.params import ParamError
from pipeline.job.run import run
from pipeline.sweep.schemas import register


def _run(*overrides: str):  # noqa: ANN202
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return run(build(compose("config", overrides=list(overrides))))


def _row(result, bound: str) -> dict:  # noqa: ANN001
    rows = result.table[result.table["bound"] == bound]
    assert len(rows) == 1, bound
    return rows.iloc[0].to_dict()


@pytest.mark.parametrize(("gamma", "exact"), [(0.5, 4), (0.3, 11), (0.2, 24)])
def test_the_worst_instance_makes_its_certified_value_in_mistakes(gamma: float, exact: int) -> None:
    """Presented as given, the SDP's instance makes exactly the class's worst case M*, which is also Novikoff's
    bound on its own certified R and margin (ratio 1); its row carries M* and a duality gap of the order of the
    solver's tolerance. At gamma = 0.2 (the float just above 1/5) M* = 24, decided in exact arithmetic, where a
    sample with R = 1 and margin 0.2 gets the bound 25 (rounded upwards to stay rigorous)."""
    result = _run("dataset=worst_case", f"gamma={gamma}")
    row = _row(result, "novikoff")
    assert row["empirical"] == exact == row["worst_case"] == row["theoretical"] and row["holds"]
    assert 0 <= row["certificate_gap"] < 1e-8
    # the dual bound at M* + 1 excludes gamma, except within the solver's tolerance of 1/sqrt(M* + 1) = 1/5
    assert row["certified_by"] == ("closed_form" if gamma == 0.2 else "sdp")
    assert (row["certificate_upper"] < gamma) == (row["certified_by"] == "sdp")
    assert row["R"] <= 1.0 + 1e-12 and row["gamma_lo"] >= gamma - 1e-12


def test_above_the_solvers_range_the_closed_form_certifies_it() -> None:
    """Past 63 mistakes the SDP is not solved: the proven closed form gives M* = floor((rho/gamma)^2) in exact
    arithmetic, and the instance x_t = rho e_t attains it, its row saying so (gap 0: the closed form's dual point
    is exact). The float 0.1 lies just above 1/10, so M* = 99, not 100."""
    result = _run("dataset=worst_case", "gamma=0.1")
    row = _row(result, "novikoff")
    assert row["empirical"] == row["worst_case"] == row["theoretical"] == 99 and row["holds"]
    # rho / sqrt(M* + 1) = 1/10 exactly, below the float 0.1 (decided in rationals; as a float it prints as 0.1)
    assert row["certified_by"] == "closed_form" and row["certificate_gap"] == 0.0 and row["certificate_upper"] <= 0.1


def test_an_instance_too_large_or_a_margin_above_the_radius_is_refused_naming_gamma() -> None:
    with pytest.raises(ParamError, match=r"gamma.*at most 5000"):
        WorstCase(gamma=0.01, rho=1.0).check()
    with pytest.raises(ParamError, match="gamma"):
        WorstCase(gamma=2.0, rho=1.0).check()


def test_the_adaptive_ordering_plays_the_game_then_one_clean_pass() -> None:
    """ordering=adaptive presents only examples the current w gets wrong, until none is left, then the sample once
    as given: T is the mistakes plus n, the last n rounds make none, and no bound is vacuous for it."""
    n = 300
    adaptive = _run("algorithm.ordering=adaptive", "gamma=0.1", f"n={n}", "d=10")
    given = _run("algorithm.ordering=given", "gamma=0.1", f"n={n}", "d=10")
    novikoff = _row(adaptive, "novikoff")
    assert novikoff["T"] == novikoff["empirical"] + n and novikoff["holds"] and novikoff["informative"]
    assert novikoff["empirical"] > _row(given, "novikoff")["empirical"]  # the adversary beats the given order here
    assert novikoff["data_hash"] == _row(given, "novikoff")["data_hash"]  # on the same sample
    for bound in ("hinge_all_rounds", "freund_schapire"):
        assert _row(adaptive, bound)["holds"]
    # the search's convergence is in the row: greedy's count, the budget, and the rollout that found the best
    assert novikoff["adversary_greedy"] <= novikoff["empirical"] and novikoff["adversary_budget"] == 200
    assert 0 <= novikoff["adversary_best_at"] <= 200
    assert (novikoff["adversary_best_at"] == 0) == (novikoff["adversary_greedy"] == novikoff["empirical"])


def test_the_comparators_hinge_is_summed_over_the_rounds_presented() -> None:
    """With the rows each round presented (ordering=adaptive repeats some), the providers give one margin per
    round, and the bounds' sums over rounds are the sums over those (T / len = 1), not passes x the sample."""
    from pipeline.bounds.perceptron import _passes
    from pipeline.contract import PresentedRun
    from pipeline.data import MarginBinary
    from pipeline.learners.base import Outcome
    from pipeline.job.statistics import _comparators

    ds = MarginBinary(gamma=0.1, rho=1.0, n=50, d=5).generate(np.random.default_rng(0))
    presented = np.array([3, 3, 7, 0, 3, *range(50)])
    plain = _comparators(ds, None, Outcome(quantities={}, curves={}, trace={}, stats={})).stats["comparators"]
    out = Outcome(quantities={}, curves={}, trace={}, stats={}, run=PresentedRun(presented=presented))
    per_round = _comparators(ds, None, out).stats["comparators"]
    assert per_round.keys() == plain.keys() and plain
    for name, m in per_round.items():
        assert np.array_equal(m, plain[name][presented])
        assert _passes({"T": presented.size}, m) == 1.0 and _passes({"T": 150}, plain[name]) == 3.0


def test_the_batch_rule_refuses_the_adaptive_ordering_and_says_which_learner_has_it() -> None:
    from pipeline.learners.perceptron import BatchPerceptron

    with pytest.raises(ParamError, match="algorithm=perceptron"):
        BatchPerceptron(ordering="adaptive").check()


def test_the_adaptive_ordering_refuses_data_not_certified_separable() -> None:
    """The game ends only when nothing is misclassified: on noisy data it would never end, so the run is refused
    in one line naming the option, before any rollout."""
    with pytest.raises(ParamError, match=r"algorithm\.ordering.*certified separable"):
        _run("algorithm.ordering=adaptive", "gamma=0.1", "n=200", "d=5", "dataset.flip=0.1")


def test_a_rollout_past_its_cap_is_an_error_naming_it() -> None:
    """Without certified statistics (the scikit-learn adapter's fit) the rollouts stop at 100 updates per example:
    a sample the game never ends on is an error naming max_updates, not a hang."""
    from pipeline.learners.perceptron import Perceptron

    X = np.array([[1.0, 0.0], [-1.0, 0.0]])  # the same point with both labels: never separated
    y = np.array([1.0, 1.0])
    X[1] = X[0]
    y[1] = -1.0
    with pytest.raises(ValueError, match="max_updates=200"):
        Perceptron(ordering="adaptive").order(X, y, np.random.default_rng(0))


def test_the_worst_instance_run_is_the_same_bits_twice() -> None:
    """Reproducible: the same config gives the same row, every column (no solver time or other circumstance)."""
    first, second = (_run("dataset=worst_case", "gamma=0.3").table for _ in range(2))
    assert list(first.columns) == list(second.columns)
    assert [c for c in first.columns if not first[c].equals(second[c])] == []


@pytest.mark.parametrize("tie", ["negative", "positive", "mistake"])
def test_the_exact_ordering_presents_the_worst_instance_of_the_samples_class(tie: str) -> None:
    """ordering=exact replaces the sample by the certified worst instance of Novikoff's class at the sample's own
    certified R and gamma_lo: the run makes exactly M* mistakes under every tie rule (the first label is the one the
    tie gets wrong), M* is the bound of the sample's statistics up to the float rounding of M* against
    (R/gamma_lo)^2, and the rows keep the sample's name and say what was presented, with the certificate."""
    sample = _run("gamma=0.3", "n=200", "d=5", f"algorithm.tie={tie}")
    result = _run("algorithm.ordering=exact", "gamma=0.3", "n=200", "d=5", f"algorithm.tie={tie}")
    row, on_sample = _row(result, "novikoff"), _row(sample, "novikoff")
    assert row["dataset"] == "margin_binary" and row["presented"] == "worst_case"
    assert row["empirical"] == row["worst_case"] and row["holds"]
    assert on_sample["theoretical"] - 1 <= row["worst_case"] <= on_sample["theoretical"]
    assert on_sample["empirical"] < row["empirical"]  # the sample in its given order is far from the worst case
    assert 0 <= row["certificate_gap"] < 1e-8 and row["data_hash"] != on_sample["data_hash"]
    assert row["R"] <= on_sample["R"] * (1 + 1e-12) and row["gamma_lo"] >= on_sample["gamma_lo"] * (1 - 1e-9)


def test_the_exact_ordering_refuses_what_it_cannot_certify_in_one_line_naming_the_option() -> None:
    from pipeline.learners.perceptron import BatchPerceptron, Perceptron

    with pytest.raises(ParamError, match=r"algorithm\.ordering.*certified separable"):
        _run("algorithm.ordering=exact", "gamma=0.1", "n=200", "d=5", "dataset.flip=0.1")
    with pytest.raises(ParamError, match=r"algorithm\.ordering.*at most 5000"):
        _run("algorithm.ordering=exact", "gamma=0.01", "n=50", "d=5")
    with pytest.raises(ParamError, match="adaptive and exact are algorithm=perceptron's"):
        BatchPerceptron(ordering="exact").check()
    with pytest.raises(ValueError, match="ordering='exact'.*to fit a sample"):
        Perceptron(ordering="exact").order(np.eye(2), np.ones(2), np.random.default_rng(0))


def test_an_sdp_built_worst_case_is_built_once_per_process_and_handed_out_as_a_copy(monkeypatch) -> None:  # noqa: ANN001
    """A sweep's seeds and orderings of one margin share the instance: the second generate solves no SDP, gives the
    same bits, and a learner writing into its copy changes nothing the next job gets."""
    import numpy as np

    import pipeline.solvers.perceptron_worst as pw
    from pipeline.data import worst_case

    monkeypatch.setattr(worst_case, "_BUILT", {})
    first = worst_case.WorstCase(gamma=0.25, rho=1.0).generate(np.random.default_rng(0))
    monkeypatch.setattr(pw, "feasible", lambda *a, **k: (_ for _ in ()).throw(AssertionError("an SDP again")))
    second = worst_case.WorstCase(gamma=0.25, rho=1.0).generate(np.random.default_rng(1))
    assert np.array_equal(first.X, second.X) and np.array_equal(first.y, second.y) and first.extra == second.extra
    second.X[0, 0] = 99.0
    third = worst_case.WorstCase(gamma=0.25, rho=1.0).generate(np.random.default_rng(2))
    assert third.X[0, 0] == first.X[0, 0] != 99.0
    with pytest.raises(AssertionError, match="an SDP again"):  # another margin is built, not served
        worst_case.WorstCase(gamma=0.3, rho=1.0).generate(np.random.default_rng(0))
