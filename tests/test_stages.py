"""pipeline.sweep.stages: the Hydra job. A sweep killed (SIGKILL) or stopped (SIGTERM) resumes without loss or
duplicates, force reruns every job, a fault anywhere in a job is recorded and the sweep still aggregates, a
signal after a run finished leaves it finished, and a worker stops within seconds once its driver is gone
(watch_driver)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from helpers import SLOW_JOBS, inject_fault, migrated_store, with_sitecustomize
from helpers import all_runs as _all_runs
from helpers import alive as _alive
from helpers import boundlab_command as _command
from helpers import fault_env as _env
from helpers import live_children as _children
from helpers import mlflow_store as _store
from helpers import sweep_runs as _runs
from helpers import wait_for as _wait_for

from pipeline.job import markers


GRID = ["-m", "gamma=0.05,0.1,0.2", "rho=1,2", "seed=0,1", "n=200", "d=5", "name=faults"]


def _boundlab_cmd() -> list[str]:
    return [str(Path(sys.executable).parent / "boundlab")]


slow = pytest.mark.slow


# ---------------------------------------------------------------- resuming and rerunning a sweep


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


# ---------------------------------------------------------------- a fault in a job


JOB_FAULTS = {  # where, and the call that fails (2: job 1 of the sweep)
    "prepare": "pipeline.job.run:prepare",
    "resume_check": "pipeline.job.markers:check",
    "input_fingerprint": "pipeline.job.identity:inputs",
    "tracking_open": "pipeline.tracking.runs:JobRun.__init__",
    "experiment_lookup": "pipeline.tracking.runs:experiment_id",
    "run": "pipeline.job.run:run",
    "write": "pipeline.sweep.stages:write",
    "tracking_finish": "pipeline.tracking.runs:JobRun.finish",
    "record": "pipeline.job.markers:record",
}


# one sweep per fault: the points before the run opens, the opening itself, and after it
SWEPT_JOB_FAULTS = ("prepare", "resume_check", "tracking_open", "run", "record")


@pytest.mark.e2e
@pytest.mark.parametrize("fault", [JOB_FAULTS[k] for k in SWEPT_JOB_FAULTS], ids=SWEPT_JOB_FAULTS)
def test_a_job_fault_anywhere_is_recorded_and_the_sweep_still_aggregates(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                          fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    boundlab = boundlab_in_process
    # experiment_id is called once in the start callback (start_parent) before the jobs: its call 3 is job 1's
    call = 3 if fault.endswith("experiment_id") else 2
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    with monkeypatch.context() as faults:
        inject_fault(faults, fault, call)
        proc = boundlab("-m", "seed=0,1", "n=50", "name=jobfault", f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "1 job(s) failed" in proc.stderr and f"{sweep / '1'} (seed=1" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    table = pd.read_parquet(sweep / "results.parquet")
    assert len(table) and set(table["seed"]) == {0}
    assert "injected fault" in (sweep / "1" / "error.txt").read_text()
    assert not (sweep / "1" / markers.MARKER).exists() and (sweep / "0" / markers.MARKER).exists()
    assert json.loads((sweep / "metrics.json").read_text())["failed_jobs"] == 1
    parents, children = _runs(uri, "jobfault")
    assert [p.info.status for p in parents] == ["FAILED"]
    statuses = Counter(c.info.status for c in children)
    assert statuses["RUNNING"] == 0 and statuses["FINISHED"] == 1
    failed = [c for c in children if c.info.status == "FAILED"]
    # a FAILED run whenever one can be opened: every fault here but the one in opening it (whose retry
    # for the failure record succeeds, call 3) leaves exactly one
    assert len(failed) == 1 and "injected fault" in failed[0].data.tags["boundlab.error"]

    clean = boundlab("-m", "seed=0,1", "n=50", "name=jobfault", f"hydra.sweep.dir={sweep}", cwd=tmp_path,
                     env=_env(tmp_path)[1])  # the fault gone, the same command completes only job 1
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert clean.stdout.count("already done") == 1 and not (sweep / "1" / "error.txt").exists()
    assert set(pd.read_parquet(sweep / "results.parquet")["seed"]) == {0, 1}


SIGTERM_AFTER_FINISH = """\
import os
if os.environ.get("BOUNDLAB_TERM_IN_PUT"):
    import signal, time
    import pipeline.job.store
    def put(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # the job's run is FINISHED and its marker written
        time.sleep(5)
    pipeline.job.store.put = put
"""


@pytest.mark.slow
def test_a_signal_after_a_run_finished_leaves_it_finished_and_the_rerun_skips_it(tmp_path: Path) -> None:
    """Interrupted between its FINISHED run and the job store, a job keeps its FINISHED run: its marker is
    written, so the rerun skips it, and it must not be left without a live FINISHED run."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = with_sitecustomize(tmp_path, SIGTERM_AFTER_FINISH, {**os.environ, "MLFLOW_TRACKING_URI": uri,
                                                              "BOUNDLAB_TERM_IN_PUT": "1"})
    argv = [*_command(), "-m", "seed=0,1", "n=100", "d=5", "name=late"]
    first = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 130, first.stderr[-2000:]
    again = subprocess.run(argv, cwd=tmp_path, env={**env, "BOUNDLAB_TERM_IN_PUT": ""}, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0 and again.stdout.count("already done") == 1, again.stdout[-2000:]
    children = [c for c in _children(uri).elements()]
    assert Counter(children) == Counter({(f"perceptron seed={s} n=100 d=5", "FINISHED"): 1 for s in range(2)})


# ---------------------------------------------------------------- a worker dies with its sweep (watch_driver)


WORKER = """\
import sys, time
from pipeline.sweep import life, context as sweep
sweep.update(driver_pid=int(sys.argv[1]))
life.set_in_job(sys.argv[2] == "busy")
life.watch_driver(grace=0.5, every=0.1)
print("watching", flush=True)
while True:
    time.sleep(0.01)
"""


@pytest.mark.slow  # orphans: a worker process and its driver
@pytest.mark.parametrize("busy", [True, False], ids=["in-a-job", "idle"])
@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_a_worker_stops_within_seconds_once_its_driver_is_gone(busy: bool, reaped: bool) -> None:
    driver = subprocess.Popen(["sleep", "120"])
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(driver.pid), "busy" if busy else "idle"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stdout.readline().strip() == "watching"
        time.sleep(0.5)
        assert worker.poll() is None, "the worker stopped while its driver was alive"
        driver.kill()
        if reaped:
            driver.wait()
        start = time.monotonic()
        worker.wait(timeout=10)
        assert time.monotonic() - start < 5
        assert worker.returncode != 0
        assert f"the sweep's process {driver.pid} is gone" in worker.stderr.read()
    finally:
        for p in (driver, worker):
            p.kill()
            p.wait()


@pytest.mark.slow
def test_killing_a_joblib_sweep_kills_its_workers_and_the_rerun_leaves_one_run_per_job(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    flag = tmp_path / "in-job"
    env = with_sitecustomize(tmp_path, SLOW_JOBS, {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_SLOW_JOB": "120",
                                                   "BOUNDLAB_SLOW_FLAG": str(flag)})
    argv = [*_command(), "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=0,1,2", "n=200", "d=5"]
    sweep = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: len(list(tmp_path.glob("in-job.*"))) == 2, 300, "two workers to be inside a job")
        workers = [int(p.name.rsplit(".", 1)[1]) for p in tmp_path.glob("in-job.*")]
        assert sweep.pid not in workers and all(_alive(w) for w in workers)
    finally:
        sweep.kill()
        sweep.wait()
    killed = time.monotonic()
    _wait_for(lambda: not any(_alive(w) for w in workers), 20, "the orphaned workers to stop")
    assert time.monotonic() - killed < 10
    rerun = subprocess.run(argv, cwd=tmp_path, env={**env, "BOUNDLAB_SLOW_JOB": "0"}, capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert _children(uri) == Counter({(f"perceptron seed={s} n=200 d=5", "FINISHED"): 1 for s in range(3)})
    assert not any(_alive(w) for w in workers)
