"""Faults: a sweep killed with SIGKILL resumes without loss or duplicates; parallel sweeps on one store
lose nothing; an unreachable tracking store stops before work; tampered data is detected."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import migrated_store, with_sitecustomize

from pipeline import markers

# slow: the tests that kill, signal or race the command's processes, or that ask the installed command
# for its exit code; the others (e2e) run the command's main in this process (boundlab_in_process)
slow = pytest.mark.slow

GRID = ["-m", "gamma=0.05,0.1,0.2", "rho=1,2", "seed=0,1", "n=200", "d=5", "name=faults"]

# In the process that is killed, every job's run first sleeps BOUNDLAB_SLOW_JOB seconds: the kill lands
# part-way through the sweep and inside a job, whatever the machine's speed, without large data.
SLOW_JOBS = """\
import os, time
if os.environ.get("BOUNDLAB_SLOW_JOB"):
    import pipeline.run
    original = pipeline.run.run
    def slow(*args, **kwargs):
        time.sleep(float(os.environ["BOUNDLAB_SLOW_JOB"]))
        return original(*args, **kwargs)
    pipeline.run.run = slow
"""


def _store(tmp_path: Path, migrated: bool = False) -> tuple[str, dict[str, str]]:
    """A store at tmp_path/mlflow.db: created by the command, or (``migrated``) a ready empty one."""
    uri = migrated_store(tmp_path / "mlflow.db") if migrated else f"sqlite:///{tmp_path / 'mlflow.db'}"
    return uri, {**os.environ, "MLFLOW_TRACKING_URI": uri}


def _all_runs(uri: str, experiment: str) -> list:
    import mlflow
    from mlflow.entities import ViewType

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=10_000)


def _boundlab_cmd() -> list[str]:
    return [str(Path(sys.executable).parent / "boundlab")]


@slow
def test_sigkill_then_same_command_completes_only_the_missing_jobs(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    uri, env = _store(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    slow_env = with_sitecustomize(tmp_path, SLOW_JOBS, env | {"BOUNDLAB_SLOW_JOB": "1"})
    proc = subprocess.Popen([*_boundlab_cmd(), *GRID], cwd=work, env=slow_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(list(work.glob("multirun/faults/*/*/done.json"))) < 4:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished_before = len(list(work.glob("multirun/faults/*/*/done.json")))
    assert 4 <= finished_before < 12, "the kill must land part-way"

    again = boundlab(*GRID, cwd=work, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    skipped = again.stdout.count("already done")
    assert skipped >= finished_before - 1 and skipped >= 3  # a job may finish between marker and kill

    clean_env = {**env, "MLFLOW_TRACKING_URI": migrated_store(tmp_path / "clean.db")}
    clean = boundlab(*GRID, f"hydra.sweep.dir={tmp_path / 'clean'}", cwd=tmp_path, env=clean_env)
    assert clean.returncode == 0, clean.stderr[-3000:]
    (sweep,) = work.glob("multirun/faults/*")
    resumed_table = (sweep / "results.parquet").read_bytes()
    assert resumed_table == (tmp_path / "clean" / "results.parquet").read_bytes()  # nothing lost, bit-identical

    runs = _all_runs(uri, "faults")
    live = [r for r in runs if r.info.lifecycle_stage == "active"]
    children = [r for r in live if "mlflow.parentRunId" in r.data.tags]
    finished = [r for r in children if r.info.status == "FINISHED"]
    statuses = Counter(r.info.status for r in children)
    keys = Counter(r.data.tags["boundlab.config_hash"] for r in finished)
    assert len(keys) == 12 and set(keys.values()) == {1}, "every job exactly once: none lost, none duplicated"
    assert statuses["RUNNING"] == 0 and statuses["KILLED"] <= 1 and statuses["FAILED"] == 0
    parents = [r for r in live if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}


@pytest.mark.e2e
def test_force_reruns_everything_and_keeps_one_live_run_per_job(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    uri, env = _store(tmp_path, migrated=True)
    grid = ["-m", "seed=0,1,2", "n=200", "name=force"]
    assert boundlab(*grid, cwd=tmp_path, env=env).returncode == 0
    rerun = boundlab(*grid, "force=true", cwd=tmp_path, env=env)
    assert rerun.returncode == 0 and "already done" not in rerun.stdout
    runs = _all_runs(uri, "force")
    stages = Counter((r.info.lifecycle_stage, "mlflow.parentRunId" in r.data.tags) for r in runs)
    assert stages == {("active", True): 3, ("deleted", True): 3, ("active", False): 1}


@slow
def test_repeated_parallel_sweeps_on_one_store_lose_nothing(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    uri, env = _store(tmp_path)
    for rep in range(3):
        seeds = ",".join(str(8 * rep + i) for i in range(8))
        proc = boundlab("-m", f"seed={seeds}", "n=500", "name=parallel", "hydra/launcher=joblib",
                        "hydra.launcher.n_jobs=4", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
    runs = _all_runs(uri, "parallel")
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len([r for r in runs if "mlflow.parentRunId" not in r.data.tags]) == 3
    assert len(children) == 24 and all(r.info.status == "FINISHED" for r in runs)
    assert len({r.data.tags["boundlab.config_hash"] for r in children}) == 24
    assert all("novikoff/ratio" in r.data.metrics and "mistakes" in r.data.metrics for r in children)
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@slow
def test_unreachable_tracking_store_stops_before_any_work(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    locked = tmp_path / "locked.db"
    holder = sqlite3.connect(locked)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    work = tmp_path / "work"
    work.mkdir()
    cases = {
        "http://127.0.0.1:9": "does not answer",
        f"sqlite:///{tmp_path / 'missing' / 'mlflow.db'}": "does not exist",
        f"sqlite:///{locked}": "cannot be written",
    }
    try:
        for uri, why in cases.items():
            proc = boundlab("-m", "seed=0,1", "n=50", cwd=work, env={**os.environ, "MLFLOW_TRACKING_URI": uri})
            assert proc.returncode == 2, proc.stderr
            assert proc.stderr.count("\n") == 1 and why in proc.stderr and "MLFLOW_TRACKING_URI" in proc.stderr
    finally:
        holder.rollback()
        holder.close()
    assert not any(work.iterdir()), "nothing written before the check"


@pytest.mark.e2e
def test_tampered_data_is_detected_and_recomputed(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    _, env = _store(tmp_path, migrated=True)
    grid = ["-m", "seed=0,1", "n=300", "name=integrity"]
    assert boundlab(*grid, cwd=tmp_path, env=env).returncode == 0
    (sweep,) = tmp_path.glob("multirun/integrity/*")
    before = (sweep / "results.parquet").read_bytes()
    data = dict(np.load(sweep / "1" / "data.npz"))
    data["X"][0, 0] += 1e-9
    np.savez(sweep / "1" / "data.npz", **data)
    again = boundlab(*grid, cwd=tmp_path, env=env)
    assert again.returncode == 0 and "no longer matches its recorded hash" in again.stdout
    assert again.stdout.count("already done") == 1
    assert (sweep / "results.parquet").read_bytes() == before


def test_resume_check_never_unpickles(tmp_path: Path) -> None:
    np.savez(tmp_path / "data.npz", X=np.array([{"evil": 1}], dtype=object), y=np.ones(1))
    markers.record(tmp_path, "k", "whatever")
    (tmp_path / "results.parquet").write_bytes(b"")
    assert "unreadable" in markers.check(tmp_path, "k")
    assert markers.check(tmp_path, "other") == "its config changed"


@slow
def test_sigterm_ends_runs_killed_and_the_sweep_resumes(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    uri, env = _store(tmp_path)
    grid = ["-m", "seed=0,1,2,3,4,5", "n=20000", "d=50", "name=term"]
    proc = subprocess.Popen([*_boundlab_cmd(), *grid], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(list(tmp_path.glob("multirun/term/*/*/done.json"))) < 2:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "run the same command to resume" in err, err[-2000:]
    statuses = Counter(r.info.status for r in _all_runs(uri, "term"))
    assert statuses["RUNNING"] == 0 and statuses["KILLED"] >= 1  # the parent, and the job it stopped
    again = boundlab(*grid, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    live = [r for r in _all_runs(uri, "term") if r.info.lifecycle_stage == "active" and r.info.status == "FINISHED"]
    assert len([r for r in live if "mlflow.parentRunId" in r.data.tags]) == 6
