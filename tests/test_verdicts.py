"""The verdict rules (pipeline.judging.verdicts), each on constructed inputs whose outcome is known.

Every rule is shown to reach each of its outcomes: a (D) violation (also one hidden at an intermediate
step), an (E) setting inconclusive with 3 seeds and holding with more, never holding without the top of a
declared range, a (P) rate whose upper limit is above delta, runs of one seed in several settings counted
once, a repeated job counted once, vacuous rows, and claims that are not applicable.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pipeline.bounds import BOUNDS
from pipeline.bounds.base import Bound, RangeError
from pipeline.judging.verdicts import (
    HOLDS,
    INCONCLUSIVE,
    MAX_TIGHT,
    NOT_APPLICABLE,
    VIOLATED,
    binomial_limits,
    expectation_settings,
    judge_bound,
    judge_claim,
    judge_row,
    summarize,
)


def _spread(n: int) -> np.ndarray:
    """n fixed values with mean 0 and sample standard deviation 1."""
    z = np.linspace(-1.0, 1.0, n)
    return (z - z.mean()) / z.std(ddof=1)


def _rows(guarantee: str, measured, bound, trivial=None, setting=None, holds=None, **extra: object) -> pd.DataFrame:  # noqa: ANN001
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
    table["seed"] = table.groupby("setting").cumcount()  # distinct seeds within a setting, shared across settings
    table["run"] = table["setting"].astype(str) + "/" + table["seed"].astype(str)
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

def test_expectation_holds_only_with_a_declared_top_of_the_range() -> None:
    values = 0.2 + 0.05 * _spread(30)  # mean 0.2 against a bound of 0.5, in the declared range [0, 1]
    ranged = judge_bound(_rows("E", values, 0.5, range_lo=0.0, range_hi=1.0))
    assert ranged["verdict"] == HOLDS and "betting" in ranged["decided_by"] and ranged["tightness"] > 1.5
    # the same values with no top: a rare large value could hide above any sample, so "holds" is never shown
    open_top = judge_bound(_rows("E", values, 0.5, range_lo=0.0, range_hi=math.inf))
    assert open_top["verdict"] == INCONCLUSIVE and "no declared upper end" in open_top["evidence"]
    assert open_top["tightness"] is None and open_top["seeds_needed"] is None
    assert "Student t" in open_top["evidence"]  # shown as a description, deciding nothing


def test_expectation_inconclusive_with_3_seeds_says_how_many_would_settle_it() -> None:
    few = 0.2 + 0.05 * _spread(3)
    s3 = judge_bound(_rows("E", few, 0.5, range_lo=0.0, range_hi=1.0))
    assert s3["verdict"] == INCONCLUSIVE and s3["seeds_needed"] > 3 and "distinct seeds (there are 3)" in s3["evidence"]
    enough = np.resize(few, s3["seeds_needed"])  # the same values repeated up to the number asked for: decided
    assert judge_bound(_rows("E", enough, 0.5, range_lo=0.0, range_hi=1.0))["verdict"] == HOLDS


def test_expectation_violated_needs_the_holm_corrected_lower_test() -> None:
    rng = np.random.default_rng(1)
    settings = ["a"] * 30 + ["b"] * 30
    measured = np.concatenate([rng.uniform(0.0, 1.0, 30), rng.uniform(2.0, 3.0, 30)])
    s = judge_bound(_rows("E", measured, 1.0, setting=settings, range_lo=0.0, range_hi=math.inf))
    assert s["verdict"] == VIOLATED and s["settings_violated"] == 1
    # no lower end declared: nothing can be shown either way
    s = judge_bound(_rows("E", measured, 1.0, setting=settings))
    assert s["verdict"] == INCONCLUSIVE and "needs a declared range" in s["evidence"]
    # a setting just above the bound is violated alone, not after Holm over 20 settings
    above = np.full(30, 1.2)
    alone = judge_bound(_rows("E", above, 1.0, range_lo=0.0, range_hi=math.inf))
    assert alone["verdict"] == VIOLATED
    p = [s_["pvalue"] for s_ in expectation_settings(_rows("E", above, 1.0, range_lo=0.0, range_hi=math.inf))][0]
    assert 0.0025 < p < 0.05  # so that Holm over 20 settings (0.05 / 20) does not reject it
    measured = np.concatenate([above] + [np.full(30, 0.5)] * 19)
    close = judge_bound(_rows("E", measured, 1.0, setting=[f"s{i // 30:02d}" for i in range(600)], range_lo=0.0,
                              range_hi=math.inf))
    assert close["verdict"] == INCONCLUSIVE and close["settings_violated"] == 0


def test_expectation_vacuous_settings_are_not_evidence() -> None:
    s = judge_bound(_rows("E", [0.1, 0.1, 0.11], 2.0, trivial=1.0, range_lo=0.0, range_hi=5.0))
    assert s["verdict"] == INCONCLUSIVE and s["settings_informative"] == 0 and "vacuous" in s["evidence"]


def test_a_repeated_job_is_one_unit_however_often_it_is_listed() -> None:
    one = _rows("E", [0.2], 0.5, range_lo=0.0, range_hi=1.0)
    eight = pd.concat([one] * 8, ignore_index=True)
    s1, s8 = judge_bound(one), judge_bound(eight)
    assert s8["verdict"] == s1["verdict"] == INCONCLUSIVE and s8["seeds"] == 1 and s8["runs"] == 1
    assert "7 repeated listing(s)" in s8["evidence"]


def test_a_declared_range_contradicted_by_a_measurement_fails_the_run() -> None:
    b = Bound(name="count", title="count", learner="toy", guarantee="E", quantity="q", requires=("T",), reference="-",
              formula="T / 2", value=lambda s: s["T"] / 2, trivial=lambda s: s["T"], range=lambda s: (0.0, s["T"]))
    assert b.evaluate({"T": 10}, {"q": 3.0})["applicable"]
    for impossible in (-1.0, 11.0):
        with pytest.raises(RangeError, match=r"bound count: the measured q is .* outside the range \[0, 10\]"):
            b.evaluate({"T": 10}, {"q": impossible})


# --- (P) ----------------------------------------------------------------------------------------------

def test_probability_by_its_clopper_pearson_limits_per_setting() -> None:
    delta = 0.05
    none_in_27 = judge_bound(_rows("P", np.zeros(27), 1.0, delta=delta))
    assert none_in_27["verdict"] == INCONCLUSIVE  # the upper limit 0.105 > delta: the point rate 0 is not enough
    assert none_in_27["violation_rate_ucl"] > delta and none_in_27["runs_needed"] == 59
    s59 = judge_bound(_rows("P", np.zeros(59), 1.0, delta=delta))
    assert s59["verdict"] == HOLDS and s59["tightness"] == MAX_TIGHT  # measured 0: any smaller bound still holds
    many = np.r_[np.full(30, 2.0), np.zeros(70)]  # 30 % of runs above the bound
    assert judge_bound(_rows("P", many, 1.0, delta=delta))["verdict"] == VIOLATED
    lo, hi = binomial_limits(0, 59)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.05 ** (1 / 59))


def test_probability_runs_sharing_a_seed_across_settings_are_not_pooled() -> None:
    # 10 settings x 10 seeds, no violation: 100 rows pooled would reach "holds" (59 suffice), but each seed's
    # runs share its data and random streams: each setting has 10 independent units, too few
    settings = [f"s{i // 10}" for i in range(100)]
    seeds = [i % 10 for i in range(100)]
    s = judge_bound(_rows("P", np.zeros(100), 1.0, setting=settings, seed=seeds, delta=0.05))
    assert s["verdict"] == INCONCLUSIVE and s["runs_needed"] == 59 and s["settings_informative"] == 10


def test_probability_counts_only_informative_runs() -> None:
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


def test_an_identity_up_to_rounding_is_a_consistency_check_not_evidence() -> None:
    # a realised bound that includes a rounding allowance a: a run at bound - a is an identity, not evidence
    b = Bound(name="realised", title="realised", learner="toy", guarantee="D", quantity="q", requires=("v", "a"),
              reference="-", formula="v + a", value=lambda s: s["v"] + s["a"], trivial=lambda s: 100.0,
              allowance=lambda s: s["a"])
    same = b.evaluate({"v": 1.0, "a": 1e-9}, {"q": 1.0})
    slack = b.evaluate({"v": 1.0, "a": 1e-9}, {"q": 0.5})
    assert same["identity"] and not same["informative"] and same["holds"] and "identity up to rounding" in same["reason"]
    assert not slack["identity"] and slack["informative"]
    rows = pd.DataFrame([same | {"run": "r0", "setting": "s"}, same | {"run": "r1", "setting": "s"}])
    s = judge_bound(rows)
    assert s["verdict"] == INCONCLUSIVE and "consistency checks" in s["evidence"] and s["informative"] == 0
    s = judge_bound(pd.concat([rows, pd.DataFrame([slack | {"run": "r2", "setting": "s"}])], ignore_index=True))
    assert s["verdict"] == HOLDS and s["informative"] == 1 and "1 of 3 runs informative" == s["informative_share"]


def test_a_plug_in_bound_is_judged_by_the_same_rules() -> None:
    # a bound record defined outside the package, evaluated run by run as a sweep does, then summarised
    def rows(declared: bool) -> pd.DataFrame:
        b = Bound(name="plug", title="plug", learner="toy", guarantee="E", quantity="loss", requires=("T",),
                  reference="-", formula="1/2", value=lambda s: 0.5, trivial=lambda s: 1.0,
                  range=(lambda s: (0.0, 1.0)) if declared else None)
        out = [b.evaluate({"T": 10}, {"loss": v}) | {"run": f"r{i}", "setting": "s", "seed": i}
               for i, v in enumerate(np.linspace(0.05, 0.25, 40))]
        return pd.DataFrame(out)

    assert judge_bound(rows(True))["verdict"] == HOLDS
    s = judge_bound(rows(False))
    assert s["verdict"] == INCONCLUSIVE and "needs a declared range" in s["evidence"]


def test_an_impossible_value_fails_the_run_naming_the_learner_or_the_bound() -> None:
    from pipeline.bounds.base import ImpossibleValue

    count = Bound(name="mistake_bound", title="m", learner="toy", guarantee="D", quantity="mistakes", requires=("T",),
                  reference="-", formula="T / 2", value=lambda s: s["T"] / 2, trivial=lambda s: s["T"],
                  range=lambda s: (0.0, float(s["T"])))
    with pytest.raises(ImpossibleValue, match="learner toy: its mistakes is nan, not a finite number"):
        count.evaluate({"T": 10}, {"mistakes": math.nan})
    with pytest.raises(ImpossibleValue, match="learner toy: its mistakes is inf"):
        count.evaluate({"T": 10}, {"mistakes": math.inf})
    with pytest.raises(RangeError, match="the measured mistakes is -1, outside the range"):  # a negative count
        count.evaluate({"T": 10}, {"mistakes": -1.0})
    nan_bound = Bound(name="nan_bound", title="n", learner="toy", guarantee="D", quantity="mistakes", requires=("T",),
                      reference="-", formula="?", value=lambda s: math.nan, trivial=lambda s: s["T"])
    with pytest.raises(ImpossibleValue, match="bound nan_bound: its value is not a number"):
        nan_bound.evaluate({"T": 10}, {"mistakes": 1.0})
    # every built-in count bound declares its range
    for b in BOUNDS:
        if b.quantity in ("mistakes", "passes_made"):
            assert b.range is not None, b.name


def test_a_comparator_bracket_that_straddles_a_deterministic_bound_is_no_violation() -> None:
    b = Bound(name="bracketed", title="b", learner="toy", guarantee="D", quantity="q", requires=(), reference="-",
              formula="1", value=lambda s: 1.0, trivial=lambda s: 10.0, quantity_low="q_low")
    row = b.evaluate({}, {"q": 1.2, "q_low": 0.9})  # the truth lies in [0.9, 1.2]: above or below 1, unknown
    assert row["holds"] is False and row["straddles"] is True
    s = judge_bound(pd.DataFrame([row | {"run": "r0", "setting": "s"}]))
    assert s["verdict"] == INCONCLUSIVE and "bracket straddles the bound" in s["evidence"] and s["violations"] == 0
    above = b.evaluate({}, {"q": 1.2, "q_low": 1.1})
    assert above["straddles"] is False
    assert judge_bound(pd.DataFrame([above | {"run": "r1", "setting": "s"}]))["verdict"] == VIOLATED


# --- round three, class 1: repeated jobs are one unit however often they are listed ------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

COUNTS = ("runs", "applicable", "informative", "violations", "settings", "settings_informative", "settings_holding",
          "settings_violated", "settings_inconclusive", "seeds")


@settings(max_examples=60, deadline=None)
@given(guarantee=st.sampled_from(["D", "E", "P"]), n=st.integers(1, 12), settings_=st.integers(1, 3),
       copies=st.lists(st.integers(1, 5), min_size=12, max_size=12), seed=st.integers(0, 2**16))
def test_no_pooled_count_exceeds_the_distinct_jobs_and_copies_change_nothing(guarantee: str, n: int, settings_: int,
                                                                              copies: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    measured = rng.uniform(0.0, 3.0, n)
    table = _rows(guarantee, measured, 2.0, trivial=10.0, setting=[f"s{i % settings_}" for i in range(n)],
                  range_lo=np.zeros(n), range_hi=np.full(n, 10.0))
    repeated = table.loc[table.index.repeat(copies[:n])].sample(frac=1.0, random_state=seed).reset_index(drop=True)
    once, listed = summarize(table)["b"], summarize(repeated)["b"]
    for key in COUNTS:
        if key in listed:
            assert listed[key] <= n, (key, listed[key], n)
            assert listed[key] == once[key], key
    assert listed["verdict"] == once["verdict"]
    assert listed["evidence"].startswith(once["evidence"])  # and says, when there were copies, that they counted once
    assert ("counted once" in listed["evidence"]) == (sum(copies[:n]) > n)


def test_the_guarantee_types_are_records_and_no_module_compares_their_letters() -> None:
    """Every decision that depends on a guarantee type asks its record (pipeline.judging.guarantees): the
    class, not the examples: a comparison of the guarantee column or field with a letter anywhere else in the
    package fails here. And each record says what the docs say of its type."""
    import re
    from pathlib import Path

    from pipeline.judging.guarantees import DRAWN, GUARANTEES, ON_THE_MEAN, ON_THE_RATE, OVER_SEEDS, PER_RUN, guarantee

    assert (PER_RUN, ON_THE_MEAN, ON_THE_RATE, OVER_SEEDS, DRAWN) == (("D",), ("E",), ("P",), ("E", "P"), ("D", "E"))
    assert set(GUARANTEES) == {"D", "E", "P", "-"} and not guarantee("-").judged and not guarantee("X").judged
    root = Path(__file__).resolve().parents[1] / "pipeline"
    letter = r"""["'](D|E|P|-)["']"""
    compared = re.compile(rf"""(==|!=)\s*{letter}|{letter}\s*(==|!=)|in\s*[\(\[]\s*{letter}"""
                          rf"""|isin\(\s*\[\s*{letter}|{letter}\s+in\s""")
    offenders = [f"{path.relative_to(root)}:{i}: {line.strip()}" for path in root.rglob("*.py")
                 if "judging" not in path.parts
                 for i, line in enumerate(path.read_text().splitlines(), 1) if compared.search(line)]
    assert not offenders, offenders
