"""The verdict rules (pipeline.verdicts), each on constructed inputs whose outcome is known.

Every rule is shown to reach each of its outcomes: a (D) violation (also one hidden at an intermediate
step), an (E) setting inconclusive with 3 seeds and holding with 30, a (P) rate whose upper limit is above
delta, vacuous rows, and claims that are not applicable.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pipeline.bounds import BOUNDS
from pipeline.bounds.base import Bound
from pipeline.verdicts import (
    HOLDS,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    VIOLATED,
    binomial_limits,
    judge_bound,
    judge_claim,
    judge_row,
    summarize,
    t_limits,
)


def _spread(n: int) -> np.ndarray:
    """n fixed values with mean 0 and sample standard deviation 1."""
    z = np.linspace(-1.0, 1.0, n)
    return (z - z.mean()) / z.std(ddof=1)


def _rows(guarantee: str, measured, bound, trivial=None, setting=None, holds=None, **extra) -> pd.DataFrame:  # noqa: ANN001
    measured = np.asarray(measured, dtype=float)
    bound = np.broadcast_to(np.asarray(bound, dtype=float), measured.shape)
    trivial = np.broadcast_to(np.asarray(10 * bound.max() if trivial is None else trivial, dtype=float), measured.shape)
    n = measured.size
    table = pd.DataFrame({
        "run": [f"r{i}" for i in range(n)], "bound": "b", "guarantee": guarantee, "empirical": measured,
        "theoretical": bound, "trivial": trivial, "applicable": True, "reason": "",
        "informative": bound < trivial, "holds": measured <= bound if holds is None else holds,
        "ratio": measured / bound, "max_ratio_over_t": measured / bound, "judged_at": "T only",
        "setting": ["s0"] * n if setting is None else setting,
    })
    for k, v in extra.items():
        table[k] = v
    return table


# --- rows ---------------------------------------------------------------------------------------------

def test_row_is_vacuous_when_the_bound_is_not_below_the_trivial_value() -> None:
    assert judge_row(3.0, 10.0, 10.0)["informative"] is False  # equal to the trivial value: says nothing
    assert judge_row(3.0, 9.0, 10.0)["informative"] is True
    assert judge_row(3.0, math.inf, 10.0)["informative"] is False


def test_every_prefix_catches_a_violation_the_last_step_hides() -> None:
    t = np.arange(1, 101, dtype=float)
    bound = 1.0 / np.sqrt(t)
    measured = 0.5 / np.sqrt(t)
    measured[40] = 1.5 * bound[40]  # above the bound at t = 41 only
    row = judge_row(measured[-1], bound[-1], 10.0, prefix=(measured, bound))
    assert judge_row(measured[-1], bound[-1], 10.0)["holds"] is True  # the last step alone says holds
    assert row["holds"] is False and row["max_ratio_over_t"] == pytest.approx(1.5)
    assert row["ratio"] == pytest.approx(0.5)


def test_a_bound_judged_at_every_step_reads_the_per_step_trace() -> None:
    b = Bound(name="toy", title="toy", learner="toy", guarantee="D", quantity="q", requires=("c", "T"), reference="-",
              formula="c / sqrt(t)", value=lambda s: s["c"] / math.sqrt(s["T"]) if np.isscalar(s["T"]) else 0,
              curve=lambda s, t: s["c"] / np.sqrt(t), trivial=lambda s: 100.0, anytime="trace")
    q = 0.5 / np.sqrt(np.arange(1, 51))
    q[9] = 2.0  # t = 10
    row = b.evaluate({"c": 1.0, "T": 50}, {"q": float(q[-1])}, {"q": q})
    assert row["holds"] is False and row["judged_at"] == "every t" and row["max_ratio_over_t"] == pytest.approx(2 * math.sqrt(10))
    assert b.evaluate({"c": 1.0, "T": 50}, {"q": float(q[-1])})["judged_at"] == "T only"  # no trace given: says so


def test_not_a_number_is_never_compared() -> None:
    row = judge_row(math.nan, 1.0, 10.0)
    assert row["holds"] is None and row["invalid"]


# --- (D) ----------------------------------------------------------------------------------------------

def test_deterministic_outcomes() -> None:
    assert judge_bound(_rows("D", [1, 2, 3], 5))["verdict"] == HOLDS
    violated = judge_bound(_rows("D", [1, 2, 6], 5))
    assert violated["verdict"] == VIOLATED and violated["violations"] == 1
    vacuous = judge_bound(_rows("D", [1, 2, 3], 5, trivial=5))
    assert vacuous["verdict"] == INCONCLUSIVE and vacuous["informative"] == 0 and "vacuous" in vacuous["evidence"]
    # a violation counts even where the bound is vacuous
    assert judge_bound(_rows("D", [1, 2, 6], 5, trivial=4))["verdict"] == VIOLATED


# --- (E) ----------------------------------------------------------------------------------------------

def test_expectation_inconclusive_with_3_seeds_holds_with_30() -> None:
    few = 0.8 + 0.15 * _spread(3)  # mean 0.8 against a bound of 1, spread 0.15: upper limit 1.05
    s3 = judge_bound(_rows("E", few, 1.0))
    assert s3["verdict"] == INCONCLUSIVE and s3["seeds_needed"] > 3 and "seeds would settle it" in s3["evidence"]
    many = 0.8 + 0.15 * _spread(30)  # the same mean and spread from 30 seeds: upper limit 0.85
    s30 = judge_bound(_rows("E", many, 1.0))
    assert s30["verdict"] == HOLDS and "Student t" in s30["decided_by"]
    mean, lo, hi = t_limits(many)
    assert hi < 1.0 and lo < mean < hi


def test_expectation_one_seed_is_inconclusive_unless_the_range_decides() -> None:
    one = judge_bound(_rows("E", [0.1], 1.0))
    assert one["verdict"] == INCONCLUSIVE and "one seed" in one["evidence"]
    # a value known to lie in [0, 0.2]: Hoeffding's limit decides from one seed, without any spread
    ranged = judge_bound(_rows("E", [0.05], 1.0, range_lo=0.0, range_hi=0.2))
    assert ranged["verdict"] == HOLDS and "Hoeffding" in ranged["decided_by"]


def test_expectation_violated_needs_the_holm_corrected_lower_limit_above() -> None:
    rng = np.random.default_rng(1)
    settings = ["a"] * 30 + ["b"] * 30
    measured = np.concatenate([0.5 + 0.05 * rng.standard_normal(30), 1.5 + 0.05 * rng.standard_normal(30)])
    s = judge_bound(_rows("E", measured, 1.0, setting=settings))
    assert s["verdict"] == VIOLATED and s["settings_violated"] == 1
    # one setting above the bound with one-sided p = 0.01: violated alone, not after Holm over 20 settings
    above = 1.0 + 2.462 * 0.1 / math.sqrt(30) + 0.1 * _spread(30)  # t = 2.462 with 29 df: p = 0.01
    assert judge_bound(_rows("E", above, 1.0))["verdict"] == VIOLATED
    measured = np.concatenate([above] + [0.5 + 0.1 * _spread(30)] * 19)
    close = judge_bound(_rows("E", measured, 1.0, setting=[f"s{i // 30:02d}" for i in range(600)]))
    assert close["verdict"] == INCONCLUSIVE and close["settings_violated"] == 0


def test_expectation_vacuous_settings_are_not_evidence() -> None:
    s = judge_bound(_rows("E", [0.1, 0.1, 0.11], 2.0, trivial=1.0))
    assert s["verdict"] == INCONCLUSIVE and s["settings_informative"] == 0 and "vacuous" in s["evidence"]


# --- (P) ----------------------------------------------------------------------------------------------

def test_probability_by_its_clopper_pearson_limits() -> None:
    delta = 0.05
    none_in_27 = judge_bound(_rows("P", np.zeros(27), 1.0, delta=delta))
    assert none_in_27["verdict"] == INCONCLUSIVE  # the upper limit 0.105 > delta: the point rate 0 is not enough
    assert none_in_27["violation_rate_ucl"] > delta and none_in_27["runs_needed"] == 59
    assert judge_bound(_rows("P", np.zeros(59), 1.0, delta=delta))["verdict"] == HOLDS
    many = np.r_[np.full(30, 2.0), np.zeros(70)]  # 30 % of runs above the bound
    assert judge_bound(_rows("P", many, 1.0, delta=delta))["verdict"] == VIOLATED
    lo, hi = binomial_limits(0, 59)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.05 ** (1 / 59))


def test_probability_pools_only_informative_runs() -> None:
    trivial = np.r_[np.full(59, 10.0), np.full(41, 0.5)]
    s = judge_bound(_rows("P", np.zeros(100), 1.0, trivial=trivial, delta=0.05))
    assert s["informative_runs"] == 59 and s["verdict"] == HOLDS
    assert judge_bound(_rows("P", np.zeros(100), 1.0, trivial=0.5, delta=0.05))["verdict"] == INCONCLUSIVE


# --- sweeps and claims ------------------------------------------------------------------------------

def test_a_bound_that_never_applied_is_not_applicable_and_fails_its_claim() -> None:
    rows = _rows("D", [1.0], 5.0).assign(applicable=False, reason="data not separable")
    s = summarize(rows)
    assert s["b"]["verdict"] == NOT_APPLICABLE and "not separable" in s["b"]["evidence"]
    v = judge_claim("e", {"bound": "b", "guarantee": "D", "claim": "x"}, s)
    assert v.status == NOT_APPLICABLE and v.fails
    assert judge_claim("e", {"bound": "zz", "guarantee": "D", "claim": "x"}, s).fails


def test_claim_carries_the_sweep_verdict_and_informative_counts() -> None:
    s = summarize(_rows("D", [1, 2, 3], 5))
    v = judge_claim("e", {"bound": "b", "guarantee": "D", "claim": "x"}, s)
    assert (v.status, v.informative, v.runs, v.fails) == (HOLDS, 3, 3, False)
    attained = judge_claim("e", {"bound": "b", "guarantee": "D", "claim": "x", "attains": True}, s)
    assert attained.status == VIOLATED and "NOT attained" in attained.text
    inconclusive = judge_claim("e", {"bound": "b", "guarantee": "E", "claim": "x"}, summarize(_rows("E", [0.9], 1.0)))
    assert inconclusive.status == INCONCLUSIVE and not inconclusive.fails


def test_every_bound_declares_its_trivial_value_and_how_it_is_judged() -> None:
    for b in BOUNDS:
        if b.guarantee == "-":
            continue
        assert b.trivial_text, b.name
        assert b.anytime in ("", "trace", "monotone"), b.name
        if b.anytime == "trace":
            assert b.curve is not None, b.name
