"""Seeds until decided (``seeds=auto``): the anytime-valid verdicts of a sequential sweep, the command's
rounds, and its refusals.

The rounds loop is driven with a stand-in for one sweep (it fills what the sweep callback leaves in
``pipeline.sweep.callbacks.LAST``), so that every way it can end is reached without running learners; the
verdicts it reads are those of :func:`pipeline.judging.verdicts.judge_bound` with a seed budget.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline import cli
from pipeline.sweep import callbacks
from pipeline.sweep.preflight import preflight
from pipeline.sweep.schemas import register
from pipeline.judging.verdicts import HOLDS, INCONCLUSIVE, VIOLATED, judge_bound


def _p_rows(n: int, violations: int = 0, delta: float = 0.05) -> pd.DataFrame:
    holds = np.ones(n, dtype=bool)
    holds[:violations] = False
    return pd.DataFrame({
        "run": [f"r{i}" for i in range(n)], "setting": "s", "seed": range(n), "bound": "b", "guarantee": "P",
        "empirical": np.where(holds, 0.5, 2.0), "theoretical": 1.0, "trivial": 10.0, "applicable": True, "reason": "",
        "informative": True, "holds": holds, "ratio": np.where(holds, 0.5, 2.0), "max_ratio_over_t": np.where(holds, 0.5, 2.0),
        "judged_at": "T only", "delta": delta})


def test_a_sequential_p_verdict_uses_the_anytime_valid_test() -> None:
    # Clopper-Pearson decides 59 clean runs, but it would lose its level if seeds were added until it did
    fixed = judge_bound(_p_rows(60))
    assert fixed["verdict"] == HOLDS and "Clopper-Pearson" in fixed["decided_by"]
    seq = judge_bound(_p_rows(60), planned=120)
    assert seq["verdict"] == INCONCLUSIVE and "may settle it" in seq["evidence"]
    done = judge_bound(_p_rows(120), planned=120)
    assert done["verdict"] == HOLDS and "anytime-valid" in done["decided_by"]
    assert 60 < done["decided_at"] <= 120 and f"decided at {done['decided_at']} seeds" in done["evidence"]
    assert judge_bound(_p_rows(120, violations=40), planned=120)["verdict"] == VIOLATED


def test_a_sequential_e_verdict_records_where_it_was_decided() -> None:
    n = 40
    rows = pd.DataFrame({
        "run": [f"r{i}" for i in range(n)], "setting": "s", "seed": range(n), "bound": "b", "guarantee": "E",
        "empirical": np.linspace(0.0, 0.4, n) % 0.41, "theoretical": 0.5, "trivial": 10.0, "applicable": True,
        "reason": "", "informative": True, "holds": True, "ratio": 0.4, "max_ratio_over_t": 0.4, "judged_at": "T only",
        "range_lo": 0.0, "range_hi": 1.0})
    s = judge_bound(rows, planned=100)
    assert s["verdict"] == HOLDS and s["seed_budget"] == 100 and 1 < s["decided_at"] <= n


def _fake_rounds(monkeypatch: pytest.MonkeyPatch, verdicts: list[dict]) -> list[list[str]]:
    """Replace one sweep by a function that records its argv and leaves the next round's summary."""
    calls: list[list[str]] = []

    def once(argv: list[str], in_round: bool = False, forced_from: int | None = None) -> None:
        assert in_round
        calls.append([*argv, f"forced_from={forced_from}"])
        callbacks.LAST.update(stats=verdicts[min(len(calls), len(verdicts)) - 1], claims=[{"bound": "b", "guarantee": "P"}])

    monkeypatch.setattr(cli, "_once", once)
    return calls


OPEN = {"b": {"guarantee": "P", "verdict": INCONCLUSIVE, "settings_informative": 1, "blocked_by": []}}
DONE = {"b": {"guarantee": "P", "verdict": HOLDS, "settings_informative": 1, "decided_at": 57}}
NO_TOP = {"b": {"guarantee": "P", "verdict": INCONCLUSIVE, "settings_informative": 1,
                "blocked_by": ["no upper end of the quantity's range is declared"]}}


def test_rounds_stop_as_soon_as_every_claim_is_decided(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    calls = _fake_rounds(monkeypatch, [OPEN, OPEN, DONE])
    cli._sequential(["-m", "x=1"], budget=100, step=25)
    assert [c[-2] for c in calls] == ["seed=range(0,25)", "seed=range(0,50)", "seed=range(0,75)"]
    assert "b holds at 57 seeds" in capsys.readouterr().out


def test_rounds_stop_when_the_plan_shows_the_budget_cannot_decide(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    """Every open claim needs more seeds than the budget at the observed values: the sweep stops after the round
    and names them; one within the budget (or a claim with no plan) keeps it going."""
    far = {"b": OPEN["b"] | {"seeds_needed": 600}}
    calls = _fake_rounds(monkeypatch, [far])
    cli._sequential(["-m", "x=1"], budget=100, step=25)
    assert [c[-2] for c in calls] == ["seed=range(0,25)"]
    assert "cannot decide b (needs about 600 seeds)" in capsys.readouterr().out
    near = {"b": OPEN["b"] | {"seeds_needed": 60}}
    calls = _fake_rounds(monkeypatch, [near, near, DONE])
    cli._sequential(["-m", "x=1"], budget=100, step=25)
    assert len(calls) == 3
    above = {"b": OPEN["b"] | {"seeds_needed": None}}  # the mean not below the bound: more seeds may show a violation
    calls = _fake_rounds(monkeypatch, [above, above, DONE])
    cli._sequential(["-m", "x=1"], budget=100, step=25)
    assert len(calls) == 3


def test_rounds_end_at_the_budget(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    calls = _fake_rounds(monkeypatch, [OPEN])
    cli._sequential(["-m"], budget=30, step=20)
    assert [c[-2] for c in calls] == ["seed=range(0,20)", "seed=range(0,30)"]
    assert "budget of 30 seeds is spent; undecided: b" in capsys.readouterr().out


def test_rounds_do_not_spend_seeds_on_what_seeds_cannot_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_rounds(monkeypatch, [NO_TOP])
    cli._sequential(["-m"], budget=100, step=10)
    assert len(calls) == 1


@pytest.mark.parametrize(("argv", "named"), [
    (["seeds=auto"], "seeds=auto: adds seeds to a sweep in rounds; add -m"),
    (["-m", "seeds=auto", "seed=0,1"], "seed=0,1: seeds=auto chooses the seeds"),
    (["-m", "seeds=many"], "seeds='many': must be fixed"),
    (["-m", "seeds=auto", "seed_budget=0"], "seed_budget=0: must be an integer from 1 to 100000"),
    (["-m", "seeds=auto", "seed_round=-1"], "seed_round=-1: must be an integer >= 1"),
    (["-m", "seeds=auto", "seed_minutes=0"], "must be null (no limit) or a number of minutes in (0, 10080]"),
    (["-m", "seeds=auto", "seed_minutes=-3"], "seed_minutes=-3"),
    (["-m", "seeds=auto", "seed_minutes=abc"], "seed_minutes='abc'"),
])
def test_sequential_misuse_is_one_line(argv: list[str], named: str, one_line_error) -> None:  # noqa: ANN001
    err = one_line_error(argv)
    assert named in err, err


def test_a_sequential_plan_names_its_budget() -> None:
    register()
    plan = preflight(["-m", "seeds=auto", "seed_budget=40", "seed_round=8", "gamma=0.1,0.2"])
    assert plan.sequential == (40, 8, None)
    assert preflight(["-m", "seeds=auto", "seed_minutes=2.5"]).sequential == (100, 10, 2.5)
    assert preflight(["-m", "gamma=0.1,0.2"]).sequential is None


def test_a_round_jumps_to_what_the_plan_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a round the next one has as many seeds as the plan of an open claim asks for within the budget (one
    more round decides it), never fewer than seed_round more, never more than the budget."""
    near = {"b": OPEN["b"] | {"seeds_needed": 170}}
    calls = _fake_rounds(monkeypatch, [near, DONE])
    cli._sequential(["-m"], budget=500, step=20)
    assert [c[-2] for c in calls] == ["seed=range(0,20)", "seed=range(0,170)"]
    assert cli._next_size(20, 20, 500, {"a": 170, "b": 900, "c": None}) == 170
    assert cli._next_size(20, 20, 500, {"a": 25}) == 40  # at least seed_round more
    assert cli._next_size(480, 20, 500, {"a": 490}) == 500  # never beyond the budget
    assert cli._next_size(20, 20, 500, {"a": 501}) == 40  # a plan beyond the budget is not followed


def test_rounds_keep_within_the_minutes_budget(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    """The pace so far says how many more seeds fit in seed_minutes: the next round is cut to fit, and none
    starts when not one more seed fits."""
    clock = [0.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock[0])
    calls: list[str] = []

    def once(argv: list[str], in_round: bool = False, forced_from: int | None = None) -> None:
        n = int(argv[-1].split(",")[1].rstrip(")"))
        clock[0] += 6.0 * (n - (forced_from or 0))  # 6 s a new seed
        calls.append(argv[-1])
        callbacks.LAST.update(stats=OPEN, claims=[{"bound": "b", "guarantee": "P"}])

    monkeypatch.setattr(cli, "_once", once)
    cli._sequential(["-m"], budget=100, step=10, minutes=2.0)  # 120 s: 10 seeds (60 s), then 10 more fit
    assert calls == ["seed=range(0,10)", "seed=range(0,20)"]
    out = capsys.readouterr().out
    assert "the budget of 2 min" in out and "raise seed_minutes" in out
    calls.clear()
    clock[0] = 0.0
    cli._sequential(["-m"], budget=100, step=10, minutes=1.5)  # 90 s: 10 seeds (60 s), then 5 fit
    assert calls == ["seed=range(0,10)", "seed=range(0,15)"]


def test_force_reruns_each_seed_once_per_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """seeds=auto force=true: round r reruns only the seeds earlier rounds of the same command did not."""
    calls = _fake_rounds(monkeypatch, [OPEN, OPEN, DONE])
    cli._sequential(["-m", "force=true"], budget=100, step=25)
    assert [c[-1] for c in calls] == ["forced_from=None", "forced_from=25", "forced_from=50"]
    from pipeline.sweep import context as sweep

    monkeypatch.setenv(sweep.ENV, sweep.Sweep(forced_from=25).to_json())
    assert not sweep.forces(True, 24) and sweep.forces(True, 25) and not sweep.forces(False, 30)
    monkeypatch.setenv(sweep.ENV, sweep.Sweep().to_json())
    assert sweep.forces(True, 0)
