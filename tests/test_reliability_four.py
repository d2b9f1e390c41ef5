"""Reliability, round four (issue 50), classes 1, 2, 3 and 6.

1. No stale result from a pack: the sweep's end reads a part only when it is complete and current (its marker
   names the members as they are now, its tables read) and only from a pack that ran in this sweep without a
   fault of its own; a pack that failed whole counts each of its members as failed (``pipeline.sweep.pack.collect``,
   ``current_members``, ``read_part``).
2. No sweep lost to an arithmetic edge: every mean and quotient a verdict quotes goes through
   ``pipeline.judging.verdicts.mean_of`` and ``quotient`` (a (D) bound whose every run measures 0; values near the
   largest double; infinite bounds).
3. No evidence from an impossible probability: ``Bound.evaluate`` checks a bound's failure probability (or a (P)
   run's delta) and its rounding allowance as it checks its value; one that is impossible fails the run naming
   the bound, a failure probability of 1 makes the row vacuous.
6. A damaged part is rerun by the same command: the skip decision is the same predicate as the sweep's end's.

Most triggers are built in-process (a pack directory written by ``pipeline.sweep.pack._run_part``, tables judged by
``pipeline.judging.verdicts.summarize``, a ``Bound`` evaluated); a few small sweeps (n=50, 4 seeds) run the command.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import numpy as np
import pytest

from pipeline.sweep import pack
from pipeline.bounds.base import Bound, ImpossibleValue
from pipeline.judging.verdicts import HOLDS, INCONCLUSIVE, MAX_TIGHT, VIOLATED, summarize, sweep_line

ATTEMPT = 1700000000.25  # the sweep's start (pipeline.sweep.context.Sweep.start) the packs below ran under


# --- classes 1 and 6, in-process: one pack of 4 members in 2 parts ---------------------------------------------

def _identity(i: int, code: str = "c1", inputs: dict | None = None) -> list:
    return [f"k{i}", code, inputs or {}]


def _member_result(spec: SimpleNamespace) -> SimpleNamespace:
    """A member's measurement as ``pipeline.job.run.measure`` gives it: two rows, one curve of three points."""
    from pipeline.job.run import RunRows

    key = spec.key()
    rows = [{"run": key, "bound": b, "guarantee": "D", "empirical": e, "applicable": True, "holds": True,
             "informative": True} for b, e in (("a", 1.0), ("b", 2.0))]
    return SimpleNamespace(rows=RunRows(key=key, rows=rows, curves={"value": (np.array([1, 2, 3]), np.array([0.0, 1.0, 1.0]))}))


def _spec(i: int) -> SimpleNamespace:
    return SimpleNamespace(key=lambda i=i: f"k{i}")


@pytest.fixture
def packed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sweep directory with one finished pack of 4 members (runs 0-3) in parts of 2, written by the pack's own
    part writer, its members.json as run_pack leaves it for this sweep's attempt."""
    monkeypatch.setattr(pack, "PART", 2)
    monkeypatch.setattr(pack, "_run_member", _member_result)
    sweep = tmp_path / "sweep"
    out = sweep / pack.pack_dir_name(0)
    out.mkdir(parents=True)
    members = [[f"seed={i}", "pack=4"] for i in range(4)]
    identities = [_identity(i) for i in range(4)]
    (out / "members.json").write_text(json.dumps({"first": 0, "members": members, "attempt": ATTEMPT,
                                                  "identities": identities}))
    for p in (0, 1):
        lo = 2 * p
        failed, _ = pack._run_part(out, p, 2, [_spec(lo), _spec(lo + 1)], members[lo:lo + 2], identities[lo:lo + 2], lo,
                                   "pack 0")
        assert not failed
    return sweep


def _collect(sweep: Path, attempt: float | None = ATTEMPT) -> tuple[int, list[int]]:
    """(rows read, failed run numbers) of the packed sweep of 4 jobs in one pack."""
    from pipeline.outputs import tables

    results, curves = tables.Gather(), tables.Gather()
    failed = pack.collect(sweep, 4, 4, results, curves, attempt)
    return len(results.frame()), [int(p.name.removeprefix("run-")) for p in failed]


def _members_json(sweep: Path, change) -> None:  # noqa: ANN001
    path = sweep / "pack-0" / "members.json"
    listed = json.loads(path.read_text())
    change(listed)
    path.write_text(json.dumps(listed))


def _recode(listed: dict) -> None:
    listed["identities"] = [_identity(i, code="c2") for i in range(4)]


def _reinput(listed: dict) -> None:
    listed["identities"][3] = _identity(3, inputs={"data.csv": "edited"})


def _rekey(listed: dict) -> None:
    listed["identities"][0] = ["k0-changed", "c1", {}]


def _earlier_attempt(listed: dict) -> None:
    listed["attempt"] = ATTEMPT - 3600.0


def _not_built(listed: dict) -> None:
    del listed["identities"]


STALE = {  # how the pack stands now -> the runs that must count as failed (the rest are read)
    "code changed": (lambda s: _members_json(s, _recode), [0, 1, 2, 3]),
    "an input file changed": (lambda s: _members_json(s, _reinput), [2, 3]),
    "a config key changed": (lambda s: _members_json(s, _rekey), [0, 1]),
    "pack failed whole": (lambda s: (s / "pack-0" / "error.txt").write_text("RuntimeError: database is locked\n"),
                          [0, 1, 2, 3]),
    "pack did not run in this sweep": (lambda s: _members_json(s, _earlier_attempt), [0, 1, 2, 3]),
    "pack stopped before building members": (lambda s: _members_json(s, _not_built), [0, 1, 2, 3]),
    "members.json gone": (lambda s: (s / "pack-0" / "members.json").unlink(), [0, 1, 2, 3]),
}


@pytest.mark.parametrize("trigger", list(STALE))
def test_the_sweeps_end_reads_no_stale_part_and_counts_a_whole_packs_fault(packed: Path, trigger: str) -> None:
    assert _collect(packed) == (8, [])  # as written: every run read
    make, failed = STALE[trigger]
    make(packed)
    rows, got = _collect(packed)
    assert got == failed, trigger
    assert rows == 2 * (4 - len(failed))  # only current parts are read


def test_a_stale_markers_error_record_never_speaks_for_this_attempt(packed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An earlier attempt's RangeError in a part marker would refute a bound; once the pack has failed whole in
    this attempt (the store locked), its members are missing evidence, not that old refutation."""
    from pipeline.bounds.base import RangeError
    from pipeline.sweep.callbacks import failures

    def refuted(spec: SimpleNamespace) -> None:
        raise RangeError("bound b: the measured mistakes is 12, outside the range [0, 10] the bound declares for it")

    monkeypatch.setattr(pack, "_run_member", refuted)
    out = packed / "pack-0"
    assert pack._run_part(out, 0, 2, [_spec(0), _spec(1)], [["seed=0"], ["seed=1"]], [_identity(0), _identity(1)], 0, "p")[0]
    path = pack.member_path(packed, 4, 0)
    assert failures(packed, [path], ATTEMPT)[0]["range_error"] is True  # this attempt's own record: read
    (out / "error.txt").write_text("RuntimeError: database is locked\n")
    assert "range_error" not in failures(packed, [path], ATTEMPT)[0]
    (out / "error.txt").unlink()
    _members_json(packed, _recode)  # the code changed since the record was written
    assert "range_error" not in failures(packed, [path], ATTEMPT)[0]


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(b"PAR1" + os.urandom(64) + b"PAR1")


def _empty_table(path: Path) -> None:
    pd.DataFrame({"run": pd.Series(dtype=object)}).to_parquet(path, index=False)


def _other_rows(path: Path) -> None:
    pd.read_parquet(path.with_name("results-part-00001.parquet")).to_parquet(path, index=False)


DAMAGE = {  # a file of part 0 and what is done to it
    "results truncated": ("results-part-00000.parquet", _truncate),
    "results empty file": ("results-part-00000.parquet", lambda p: p.write_bytes(b"")),
    "results garbage": ("results-part-00000.parquet", _garbage),
    "results an empty table": ("results-part-00000.parquet", _empty_table),
    "results of another part": ("results-part-00000.parquet", _other_rows),
    "curves truncated": ("curves-part-00000.parquet", _truncate),
    "curves empty file": ("curves-part-00000.parquet", lambda p: p.write_bytes(b"")),
    "results deleted after its marker": ("results-part-00000.parquet", lambda p: p.unlink()),
    "curves deleted after its marker": ("curves-part-00000.parquet", lambda p: p.unlink()),
    "marker truncated": ("part-00000.json", _truncate),
}


@pytest.mark.parametrize("trigger", list(DAMAGE))
def test_a_damaged_part_is_not_complete_for_the_rerun_nor_read_at_the_end(packed: Path, trigger: str) -> None:
    """One predicate (pipeline.sweep.pack.read_part): what a rerun runs again is exactly what the end refuses. (A part
    file deleted or a marker truncated was already rerun by the old code; every other damage was 'already done'.)"""
    out = packed / "pack-0"
    identities = [_identity(i) for i in range(4)]
    assert pack.part_complete(out, 0, identities[:2]) and pack.part_complete(out, 1, identities[2:])
    name, damage = DAMAGE[trigger]
    damage(out / name)
    assert isinstance(pack.read_part(out, 0, identities[:2]), str)
    assert not pack.part_complete(out, 0, identities[:2])  # the rerun runs part 0 again...
    assert pack.part_complete(out, 1, identities[2:])  # ...and only part 0
    assert _collect(packed) == (4, [0, 1])  # the end: its runs count as failed, the other part is read


# --- classes 1 and 6, end to end: small packed sweeps -----------------------------------------------------------

GRID = ("seed=0,1,2,3", "n=50", "d=3", "gamma=0.2", "pack=2")  # every bound holds here


def _sweep(boundlab, tmp_path: Path, *args: str, code: int = 0):  # noqa: ANN001, ANN202
    from helpers import migrated_store

    uri = migrated_store(tmp_path / "mlflow.db")
    proc = boundlab("-m", *GRID, *args, f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                    env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.e2e
def test_a_learners_code_changed_and_the_store_locked_republishes_no_old_holds(
        tmp_path: Path, boundlab_in_process, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The issue's example: after a learner's code changed, the tracking store fails every pack: both packs fail,
    and metrics.json must not say the old code's 'holds' with failed_jobs 0."""
    from helpers import inject_fault

    from pipeline.job import identity

    _sweep(boundlab_in_process, tmp_path)
    metrics = json.loads((tmp_path / "sweep" / "metrics.json").read_text())
    assert metrics["failed_jobs"] == 0 and metrics["novikoff"]["verdict"] == HOLDS
    job_code = identity.job_code
    monkeypatch.setattr(identity, "job_code", lambda spec: "edited-" + job_code(spec))  # the learner's code changed
    with monkeypatch.context() as m:
        inject_fault(m, "pipeline.sweep.pack:_pack_run")  # the tracking store is locked by another process
        proc = _sweep(boundlab_in_process, tmp_path, code=1)
    metrics = json.loads((tmp_path / "sweep" / "metrics.json").read_text())
    assert metrics["failed_jobs"] == 4 and metrics["runs"] == 0, metrics
    assert not any(isinstance(s, dict) and s.get("verdict") == HOLDS for s in metrics.values()), metrics
    assert not (tmp_path / "sweep" / "results.parquet").exists()
    assert "4 job(s) failed" in proc.stderr and "the pack failed as a whole" in proc.stdout + proc.stderr
    calls: list[object] = []
    run_member = pack._run_member
    monkeypatch.setattr(pack, "_run_member", lambda spec: calls.append(spec) or run_member(spec))
    _sweep(boundlab_in_process, tmp_path)  # the store back: the same command reruns every stale part
    assert len(calls) == 4
    assert json.loads((tmp_path / "sweep" / "metrics.json").read_text())["failed_jobs"] == 0


@pytest.mark.e2e
@pytest.mark.parametrize("trigger", ["results truncated", "results empty file", "curves truncated"])
def test_the_same_command_reruns_exactly_the_damaged_part(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                          monkeypatch: pytest.MonkeyPatch, trigger: str) -> None:
    _sweep(boundlab_in_process, tmp_path)
    before = pd.read_parquet(tmp_path / "sweep" / "results.parquet")
    name, damage = DAMAGE[trigger]
    damage(tmp_path / "sweep" / "pack-1" / name)
    calls: list[object] = []
    run_member = pack._run_member
    monkeypatch.setattr(pack, "_run_member", lambda spec: calls.append(spec) or run_member(spec))
    # the job store holds the part whole (kept when its pack finished): it comes back from there, nothing runs
    proc = _sweep(boundlab_in_process, tmp_path)
    assert calls == [] and "pack 1 (runs 2-3): 1 of 1 parts found in the job store" in proc.stdout, proc.stdout[-2000:]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "sweep" / "results.parquet"), before, check_exact=True)
    # without the store's copy, exactly the damaged part runs again
    damage(tmp_path / "sweep" / "pack-1" / name)
    monkeypatch.setattr(pack, "_reuse_part", lambda *args: None)
    proc = _sweep(boundlab_in_process, tmp_path)
    assert [s.seed for s in calls] == [2, 3], proc.stdout[-2000:]  # pack 1's part only, not pack 0
    assert "pack 0 (runs 0-1): already done" in proc.stdout and "pack 1 (runs 2-3): already done" not in proc.stdout
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "sweep" / "results.parquet"), before, check_exact=True)


# --- class 2: every mean and quotient a verdict quotes, at the edges of arithmetic -------------------------------

def _table(guarantee: str, measured: list[float], bound: list[float], trivial: float = 50.0, lo: float = 0.0,
           hi: float = 10.0, **extra: list) -> pd.DataFrame:
    rows = []
    for i, (e, t) in enumerate(zip(measured, bound)):
        ratio = e / t if t > 0 else (0.0 if e <= t else math.inf)
        rows.append({"run": f"r{i}", "bound": "b", "guarantee": guarantee, "empirical": e, "theoretical": t,
                     "trivial": trivial, "applicable": True, "reason": "", "informative": t < trivial, "holds": e <= t,
                     "ratio": ratio, "max_ratio_over_t": ratio, "judged_at": "T only", "setting": "s0", "seed": i,
                     "learner": "toy", "range_lo": lo, "range_hi": hi, "delta": 0.1, "param_names": "seed"}
                    | {k: v[i] for k, v in extra.items()})
    return pd.DataFrame(rows)


BIG = 1e308
EDGES = {  # the table -> (verdict, words the evidence must hold)
    "(D) every run measures 0": (_table("D", [0.0] * 4, [5.0] * 4), HOLDS, "largest measured/bound 0"),
    "(D) a bound of exactly 0, measured 0": (_table("D", [0.0] * 4, [0.0] * 4), HOLDS, "largest measured/bound 0"),
    "(D) 0 measured, infinite bounds mixed in": (_table("D", [0.0] * 4, [math.inf, 5.0, math.inf, 3.0]), HOLDS,
                                                "2 informative"),
    "(D) an identity with allowance 0": (_table("D", [2.0, 1.0], [2.0, 5.0], identity=[True, False], allowance=[0.0, 0.0]),
                                         HOLDS, "at most 0 x the rounding allowance"),
    "(E) every value 1e308": (_table("E", [BIG] * 6, [1.7e308] * 6, trivial=math.inf, hi=1.79e308), HOLDS,
                              "0.8"),
    "(E) every value -1e308": (_table("E", [-BIG] * 6, [BIG] * 6, trivial=math.inf, lo=-1.79e308, hi=1.79e308),
                               INCONCLUSIVE, "mean -1e+308 vs bound 1e+308"),
    "(E) every value 0, bounds 0": (_table("E", [0.0] * 6, [0.0] * 6), INCONCLUSIVE, "mean 0 vs bound 0"),
}


@pytest.mark.parametrize("trigger", list(EDGES))
def test_an_arithmetic_edge_gives_a_verdict_with_finite_quoted_numbers(trigger: str) -> None:
    table, verdict, words = EDGES[trigger]
    s = summarize(table)["b"]  # never raises (a ZeroDivisionError lost the whole sweep's end before)
    assert s["verdict"] == verdict, s["evidence"]
    line = sweep_line(s)
    assert words in line, line
    assert not re.search(r"\b(-?inf|nan)\b", s["evidence"]), s["evidence"]  # no overflowed mean, no 0 / 0
    for setting in s.get("per_setting", []):
        if "mean" in setting:
            assert setting["mean"] is not None and setting["bound"] is not None, setting  # not overflowed to inf
    if trigger.startswith("(D)") and "allowance" not in trigger:  # every informative run measured 0
        assert s["tightness"] == MAX_TIGHT and "any smaller bound still holds (measured 0)" in line


def test_the_safe_mean_and_quotient() -> None:
    from pipeline.judging.verdicts import mean_of, quotient, t_limits

    assert mean_of(pd.Series([BIG, BIG])) == BIG and mean_of([-BIG, -BIG, -BIG]) == -BIG
    assert mean_of(pd.Series([BIG, math.nan, BIG])) == BIG  # a pandas column skips NaN, as its mean does
    assert mean_of([math.inf, 1.0]) == math.inf and math.isnan(mean_of([]))
    assert mean_of(pd.Series([0.1, 0.2, 0.3])) == pd.Series([0.1, 0.2, 0.3]).mean()  # ordinary values: bit for bit
    mean, lo, hi = t_limits([BIG, BIG * 0.9, BIG * 0.8])
    assert math.isfinite(mean) and math.isfinite(lo) and lo < mean < hi
    assert quotient(1.0, 0.0) == math.inf and quotient(0.0, 0.0) == 0.0 and quotient(-1.0, 0.0) == -math.inf
    assert quotient(BIG, 0.5) == math.inf and math.isnan(quotient(math.nan, 0.0))


@pytest.mark.e2e
def test_a_csv_whose_labels_are_all_negative_gives_its_table_and_metrics(tmp_path: Path,
                                                                         boundlab_in_process) -> None:  # noqa: ANN001
    """The issue's example: every label -1, so no run makes a mistake; Novikoff's (D) bound is informative and
    every run measures 0. The sweep's end divided by zero: no results table, no metrics.json, the parent FAILED."""
    from helpers import migrated_store

    rows = "\n".join(f"1.0,{0.02 * i:.2f},-1" for i in range(40))  # R ~ 1.3, gamma* ~ 1: informative
    (tmp_path / "neg.csv").write_text(rows + "\n")
    uri = migrated_store(tmp_path / "mlflow.db")
    proc = boundlab_in_process("-m", "seed=0,1", "dataset=file", f"dataset.path={tmp_path / 'neg.csv'}",
                               f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                               env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert "aggregation" not in proc.stderr and "ZeroDivisionError" not in proc.stderr, proc.stderr[-3000:]
    assert (tmp_path / "sweep" / "results.parquet").exists(), proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "sweep" / "metrics.json").read_text())
    table = pd.read_parquet(tmp_path / "sweep" / "results.parquet")
    zero = table[(table["guarantee"] == "D") & table["applicable"].astype(bool) & table["informative"].astype(bool)]
    assert len(zero) and (zero["empirical"] == 0).all()  # the trigger: every informative (D) run measures 0
    assert all(metrics[b]["verdict"] == HOLDS for b in zero["bound"].unique()), metrics
    assert proc.returncode == 0, proc.stderr[-3000:]


# --- class 3: a bound's failure probability and rounding allowance are checked as its value is -------------------

def _bound(**changes: object) -> Bound:
    base = Bound(name="plug", title="plug", learner="toy", guarantee="P", quantity="q", requires=("T",),
                 reference="test", formula="q <= 1", value=lambda s: 1.0, trivial=lambda s: 100.0,
                 range=lambda s: (0.0, 1000.0))
    return dataclasses.replace(base, **changes)


IMPOSSIBLE = {
    "failure 1.5": dict(failure=lambda s: 1.5),
    "failure -0.1": dict(failure=lambda s: -0.1),
    "failure nan": dict(failure=lambda s: math.nan),
    "failure inf": dict(failure=lambda s: math.inf),
    "failure not a number": dict(failure=lambda s: "often"),
    "allowance inf": dict(guarantee="D", allowance=lambda s: math.inf),
    "allowance nan": dict(guarantee="D", allowance=lambda s: math.nan),
    "allowance negative": dict(guarantee="D", allowance=lambda s: -1e-9),
    "(D) failure 2": dict(guarantee="D", failure=lambda s: 2.0),
}


@pytest.mark.parametrize("trigger", list(IMPOSSIBLE))
def test_an_impossible_failure_probability_or_allowance_fails_the_run_naming_the_bound(trigger: str) -> None:
    bound = _bound(**IMPOSSIBLE[trigger])
    with pytest.raises(ImpossibleValue, match=r"^bound plug: its (failure probability|rounding allowance) is "):
        bound.evaluate({"T": 10}, {"q": 0.5})


@pytest.mark.parametrize("delta", [1.5, -0.1, math.nan])
def test_a_p_runs_impossible_delta_fails_the_run_naming_the_bound(delta: float) -> None:
    with pytest.raises(ImpossibleValue, match=r"^bound plug: its failure probability \(the run's delta\) is "):
        _bound().evaluate({"T": 10, "delta": delta}, {"q": 0.5})


def test_possible_values_are_judged_as_before() -> None:
    row = _bound(failure=lambda s: 0.25).evaluate({"T": 10}, {"q": 0.5})
    assert row["failure"] == 0.25 and row["informative"] and row["holds"]
    row = _bound().evaluate({"T": 10, "delta": 0.05}, {"q": 2.0})
    assert row["informative"] and row["holds"] is False and math.isnan(row["failure"])
    row = _bound(guarantee="D", allowance=lambda s: 0.0).evaluate({"T": 10}, {"q": 1.0})
    assert row["identity"] and row["allowance"] == 0.0  # an exact identity, allowance 0
    row = _bound(guarantee="D", allowance=lambda s: 1e-12).evaluate({"T": 10}, {"q": 0.5})
    assert not row["identity"] and row["informative"]


def test_a_failure_probability_of_1_is_vacuous_never_holds() -> None:
    """Every run above the bound, the bound allowed to fail with probability 1: that 'held' before (the rate's upper
    limit is <= 1 always); such a row is now vacuous, and the verdict says so."""
    bound = _bound(failure=lambda s: 1.0)
    rows = []
    for seed in range(30):
        row = bound.evaluate({"T": 10}, {"q": 5.0})
        assert row["holds"] is False and not row["informative"] and "probability 1" in row["reason"]
        rows.append(row | {"run": f"r{seed}", "seed": seed, "setting": "s0", "learner": "toy", "delta": 0.05})
    s = summarize(pd.DataFrame(rows))["plug"]
    assert s["verdict"] == INCONCLUSIVE and "vacuous" in s["evidence"], s["evidence"]


@pytest.mark.e2e
def test_a_sweep_whose_bound_returns_an_impossible_probability_fails_naming_it(
        tmp_path: Path, boundlab_in_process, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A plug-in-like bound whose failure probability is 1.5: each job fails naming it, and no verdict of it holds."""
    from helpers import migrated_store

    import pipeline.job.run as run_module

    bounds_for = run_module.bounds_for
    monkeypatch.setattr(run_module, "bounds_for", lambda learner: tuple(
        dataclasses.replace(b, failure=lambda s: 1.5) if b.name == "novikoff" else b for b in bounds_for(learner)))
    uri = migrated_store(tmp_path / "mlflow.db")
    proc = boundlab_in_process("-m", "seed=0,1", "n=50", "d=3", f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                               env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == 1 and "2 job(s) failed" in proc.stderr, proc.stderr[-3000:]
    assert "bound novikoff: its failure probability is 1.5" in (tmp_path / "sweep" / "0" / "error.txt").read_text()
    metrics = json.loads((tmp_path / "sweep" / "metrics.json").read_text())
    assert metrics["failed_jobs"] == 2 and all(s["verdict"] != HOLDS for s in metrics.values() if isinstance(s, dict))
    assert VIOLATED not in {s.get("verdict") for s in metrics.values() if isinstance(s, dict)}
