"""No verdict from the survivors (docs/bounds.md section 9, "Missing runs"): a sweep's failed jobs are
missing evidence, never left out. A run that contradicted a bound's declared range (``RangeError``) refutes
that bound, naming the run, the value and the range; any other failed job makes each (E)/(P) setting it
belongs to, and a (D) bound's sweep, at best inconclusive; a violation among the survivors stays one; with
nothing failed the summary is exactly what it was. Built tables and failure records, judged in-process, and
one real sweep whose bound's range some seeds contradict.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pipeline.judging.verdicts import HOLDS, INCONCLUSIVE, VIOLATED, summarize


def _table(guarantee: str, seeds: int = 28, settings: tuple[str, ...] = ("s0",), learner: str = "toy",
           bound: str = "b", violating: int = 0) -> pd.DataFrame:
    """``seeds`` runs per setting of one bound that would hold (measured well below it, range [0, 10], the
    (P) delta 0.2: 28 runs without a violation put the rate's upper limit at 0.10); ``violating`` runs of the
    first setting above it."""
    rows = []
    for k, setting in enumerate(settings):
        for seed in range(seeds):
            measured = 1.0 + 0.02 * seed + (10.0 if k == 0 and seed < violating else 0.0)
            measured = min(measured, 10.0)
            rows.append({"run": f"{setting}/{seed}", "bound": bound, "guarantee": guarantee, "empirical": measured,
                         "theoretical": 5.0, "trivial": 50.0, "applicable": True, "reason": "", "informative": True,
                         "holds": measured <= 5.0, "ratio": measured / 5.0, "max_ratio_over_t": measured / 5.0,
                         "judged_at": "T only", "setting": setting, "seed": seed, "learner": learner, "range_lo": 0.0,
                         "range_hi": 10.0, "delta": 0.2, "param_names": "learner dataset lam seed", "lam": float(k)})
    return pd.DataFrame(rows)


def _out_of_range(seed: int, bound: str = "b", setting: str = "s0") -> dict:
    """A job's failure record (pipeline.sweep.stages.failure_record) for a measurement outside the bound's range."""
    return {"label": f"job {seed} (seed={seed})", "kind": "RangeError", "range_error": True, "bound": bound,
            "quantity": "mistakes", "value": "12", "range": "[0, 10]", "learner": "toy", "setting": setting,
            "message": f"bound {bound}: the measured mistakes is 12, outside the range [0, 10] the bound declares for it"}


@pytest.mark.parametrize("guarantee", ["D", "E", "P"])
def test_thirty_seeds_two_out_of_range_is_violated_naming_the_run(guarantee: str) -> None:
    """The referee's sweep: 30 seeds, 2 failed with RangeError naming the bound, 28 survivors that hold."""
    table = _table(guarantee)
    assert summarize(table)["b"]["verdict"] == HOLDS  # the survivors alone: what the sweep used to say
    s = summarize(table, failed=[_out_of_range(3), _out_of_range(17)])["b"]
    assert s["verdict"] == VIOLATED, s["evidence"]
    assert "job 3 (seed=3): measured mistakes 12, outside the declared range [0, 10]" in s["evidence"]
    assert "job 17 (seed=17)" in s["evidence"] and "whatever the other 28 runs show" in s["evidence"]
    assert s["range_violations"] == 2 and s["range_examples"] == ["job 3 (seed=3)", "job 17 (seed=17)"]
    assert s["decided_by"] == "the bound's declared range, every run"


def test_a_bound_refuted_by_its_range_with_no_surviving_run_is_still_judged() -> None:
    s = summarize(_table("D", bound="other"), failed=[_out_of_range(0, bound="gone") | {"guarantee": "E"}])
    assert s["gone"]["verdict"] == VIOLATED and s["gone"]["guarantee"] == "E" and s["gone"]["runs"] == 0
    assert s["other"]["verdict"] == INCONCLUSIVE  # the same learner's job is missing from the other bound
    assert s["other"]["missing_jobs"] == 1


@pytest.mark.parametrize("guarantee", ["D", "E", "P"])
def test_a_non_range_failure_makes_its_setting_and_the_bound_inconclusive(guarantee: str) -> None:
    table = _table(guarantee, settings=("s0", "s1"))
    assert summarize(table)["b"]["verdict"] == HOLDS
    lost = {"label": "job 40 (seed=12 lam=1)", "kind": "ImpossibleValue", "learner": "toy", "setting": "s1",
            "message": "learner toy: its mistakes is nan, not a finite number"}
    s = summarize(table, failed=[lost])["b"]
    assert s["verdict"] == INCONCLUSIVE, s["evidence"]
    assert s["missing_jobs"] == 1 and s["missing_examples"] == ["job 40 (seed=12 lam=1)"]
    assert "1 job(s) failed: job 40 (seed=12 lam=1)" in s["evidence"]
    if guarantee == "D":
        assert s["evidence"].startswith("0 violations in 56 runs") and "but 1 job(s) failed" in s["evidence"]
    else:  # only the setting the job belongs to misses it
        per = {p["label"]: p for p in s["per_setting"]}
        assert per["lam=0"]["verdict"] == HOLDS and "missing_jobs" not in per["lam=0"]
        assert per["lam=1"]["verdict"] == INCONCLUSIVE and per["lam=1"]["missing_jobs"] == 1
        assert "would hold from their surviving runs alone but miss failed jobs, e.g. lam=1" in s["evidence"]


def test_a_failed_jobs_setting_is_found_from_its_overrides_or_else_it_is_every_settings() -> None:
    table = _table("E", settings=("s0", "s1"))
    by_overrides = summarize(table, failed=[{"label": "job 9", "overrides": ["algorithm.lam=1.0", "seed=9", "n=40"]}])["b"]
    assert [p.get("missing_jobs") for p in by_overrides["per_setting"]] == [None, 1]
    unknown = summarize(table, failed=[{"label": "job 9", "overrides": ["dataset=elsewhere"]}])["b"]
    assert [p.get("missing_jobs") for p in unknown["per_setting"]] == [1, 1] and unknown["verdict"] == INCONCLUSIVE
    nothing = summarize(table, failed=[{"label": "job 9"}])["b"]  # a job with no record and no overrides: everywhere
    assert [p["verdict"] for p in nothing["per_setting"]] == [INCONCLUSIVE, INCONCLUSIVE]
    absent = summarize(table, failed=[{"label": "job 9", "setting": "s2", "learner": "toy"}])["b"]  # no run survived there
    assert absent["verdict"] == INCONCLUSIVE and "in a setting with no surviving run" in absent["evidence"]


def test_a_violation_among_the_survivors_stays_a_violation() -> None:
    s = summarize(_table("D", violating=2), failed=[{"label": "job 5", "learner": "toy", "setting": "s0"}])["b"]
    assert s["verdict"] == VIOLATED and "a violation among the survivors stands" in s["evidence"]
    e = summarize(_table("E", violating=28), failed=[{"label": "job 5", "learner": "toy", "setting": "s0"}])["b"]
    assert e["verdict"] == VIOLATED and e["missing_jobs"] == 1


def test_another_learners_failed_job_or_a_setting_the_bound_skips_is_not_missing_here() -> None:
    table = _table("D", settings=("s0", "s1"))
    table.loc[table["setting"] == "s1", "applicable"] = False
    before = summarize(table)
    assert summarize(table, failed=[{"label": "job 1", "learner": "other", "setting": "s0"}]) == before
    assert summarize(table, failed=[{"label": "job 1", "learner": "toy", "setting": "s1"}]) == before


@pytest.mark.parametrize("guarantee", ["D", "E", "P"])
def test_without_failures_the_summary_is_identical(guarantee: str) -> None:
    table = pd.concat([_table(guarantee, settings=("s0", "s1"), violating=3), _table(guarantee, bound="c", seeds=5)])
    before = json.dumps(summarize(table), default=str, sort_keys=True)
    assert json.dumps(summarize(table, failed=[]), default=str, sort_keys=True) == before
    assert json.dumps(summarize(table, failed=None), default=str, sort_keys=True) == before


# --- where the sweep's end reads a failure's kind --------------------------------------------------------------

def _spec(seed: int) -> SimpleNamespace:
    return SimpleNamespace(learner=SimpleNamespace(name="toy"), key=lambda seeded=True: f"k{seed}" if seeded else "s0",
                           params=lambda: {"seed": seed, "lam": np.float64(0.5)})


def test_a_failed_jobs_record_is_written_beside_error_txt_and_a_stale_one_is_ignored(tmp_path: Path) -> None:
    from pipeline.bounds.base import ImpossibleValue, RangeError
    from pipeline.sweep.callbacks import failures
    from pipeline.sweep.stages import failure_record, read_failure, write_failure

    job = tmp_path / "sweep" / "3"
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text("- seed=3\n- n=40\n")
    (job / "error.txt").write_text("Traceback ...\n")
    error = RangeError("bound novikoff: the measured mistakes is 45, outside the range [0, 40] the bound declares for it: "
                       "a bug in the learner or in the bound's range")
    write_failure(job, failure_record(error, _spec(3), "toy seed=3"))
    (found,) = failures(tmp_path / "sweep", [job])
    assert found["label"] == "job 3 (seed=3 n=40)" and found["overrides"] == ["seed=3", "n=40"]
    assert {k: found[k] for k in ("kind", "range_error", "bound", "quantity", "value", "range", "learner", "setting")} == {
        "kind": "RangeError", "range_error": True, "bound": "novikoff", "quantity": "mistakes", "value": "45",
        "range": "[0, 40]", "learner": "toy", "setting": "s0"}
    assert found["params"] == {"seed": 3, "lam": 0.5}
    other = failure_record(ImpossibleValue("bound b: its value is not a number on statistics {}: a bug in the bound"))
    assert other["range_error"] is False and other["bound"] == "b" and other["kind"] == "ImpossibleValue"
    later = time.time() + 5  # error.txt of a later attempt that left no record: the old record is not its
    os.utime(job / "error.txt", (later, later))
    assert read_failure(job) is None
    (job / "error.txt").unlink()  # finished since: no error at all
    assert read_failure(job) is None


def test_a_pack_members_failure_kind_is_in_its_parts_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.sweep import pack
    from pipeline.bounds.base import RangeError
    from pipeline.sweep.callbacks import failures

    def member(spec: SimpleNamespace) -> None:
        if spec.key() == "k0":
            raise RangeError("bound b: the measured mistakes is 12, outside the range [0, 10] the bound declares for it")
        raise RuntimeError("disk full")

    monkeypatch.setattr(pack, "_run_member", member)
    sweep = tmp_path / "sweep"
    out = sweep / pack.pack_dir_name(0)
    out.mkdir(parents=True)
    members = [["seed=0", "pack=2"], ["seed=1", "pack=2"]]
    (out / "members.json").write_text(json.dumps({"first": 0, "members": members}))
    assert pack._run_part(out, 0, 1, [_spec(0), _spec(1)], members, [["k0"], ["k1"]], 0, "pack 0")[0]  # one failed
    got = failures(sweep, [pack.member_path(sweep, 2, 0), pack.member_path(sweep, 2, 1)])
    assert [f["label"] for f in got] == ["pack-0 run 0 (seed=0 pack=2)", "pack-0 run 1 (seed=1 pack=2)"]
    assert got[0]["range_error"] is True and got[0]["bound"] == "b" and got[0]["setting"] == "s0"
    assert got[1]["kind"] == "RuntimeError" and got[1]["range_error"] is False
    s = summarize(_table("D"), failed=got)["b"]
    assert s["verdict"] == VIOLATED and "pack-0 run 0 (seed=0 pack=2): measured mistakes 12" in s["evidence"]
    assert s["missing_jobs"] == 1  # the other member is missing evidence


# --- one real sweep ---------------------------------------------------------------------------------------------

@pytest.mark.e2e  # a 6-job sweep through the command, in this process
def test_a_sweep_whose_bounds_range_some_seeds_contradict_judges_it_violated(
        tmp_path: Path, boundlab_in_process, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """novikoff's declared range, for seeds 1 and 4 only, is [T + 1, 2T], which their mistake counts contradict:
    those jobs fail with RangeError, and the four that survive would say "holds"."""
    from helpers import migrated_store

    import pipeline.job.run as run_module

    bad, current = {1, 4}, {}
    prepare, bounds_for = run_module.prepare, run_module.bounds_for

    def seeing(job, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        current["seed"] = job.seed
        return prepare(job, *args, **kwargs)

    def lying(learner: str) -> tuple:
        out = bounds_for(learner)
        if current.get("seed") not in bad:
            return out
        return tuple(dataclasses.replace(b, range=lambda s: (float(s["T"]) + 1, 2.0 * float(s["T"])))
                     if b.name == "novikoff" else b for b in out)

    monkeypatch.setattr(run_module, "prepare", seeing)
    monkeypatch.setattr(run_module, "bounds_for", lying)
    sweep = tmp_path / "sweep"
    uri = migrated_store(tmp_path / "mlflow.db")
    done = boundlab_in_process("-m", "seed=0,1,2,3,4,5", "n=40", "d=3", "force=true", f"hydra.sweep.dir={sweep}",
                               cwd=tmp_path, env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert done.returncode == 1, done.stderr[-3000:]
    assert "2 job(s) failed" in done.stderr and "bound(s) violated: novikoff (D)" in done.stderr, done.stderr[-3000:]
    record = json.loads((sweep / "1" / "error.json").read_text())
    assert record["range_error"] is True and record["bound"] == "novikoff" and record["learner"] == "perceptron"
    metrics = json.loads((sweep / "metrics.json").read_text())
    novikoff = metrics["novikoff"]
    assert novikoff["verdict"] == VIOLATED and novikoff["range_violations"] == 2, novikoff["evidence"]
    assert "job 1 (seed=1 " in novikoff["evidence"] and "job 4 (seed=4 " in novikoff["evidence"]
    assert f"outside the declared range {record['range']}" in novikoff["evidence"]
    others = {b: s for b, s in metrics.items() if isinstance(s, dict) and b != "novikoff"}
    assert others and all(s["verdict"] != HOLDS and s["missing_jobs"] == 2 for s in others.values()), others
    assert "VIOLATED" in done.stdout and "whatever the other 4 runs show" in done.stdout
