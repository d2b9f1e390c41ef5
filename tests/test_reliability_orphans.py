"""Orphans and twins: one process per sweep directory and per job directory, workers that die with their
sweep, one output directory per single run (pipeline.locks.hold, pipeline.stages.watch_driver)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import with_sitecustomize

from pipeline import locks, markers

HOLDER = """\
import sys, time
from pathlib import Path
from pipeline import locks
fd = locks.hold(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(120)
"""


def _wait_for(predicate, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)


def _default_signals() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    from pipeline.stages import _alive as alive

    return alive(pid)


# ---------------------------------------------------------------- the lock itself


@pytest.mark.slow  # a lock held by another process
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_held_directory_is_refused_naming_its_holder_and_freed_when_the_holder_dies(tmp_path: Path, sig: int) -> None:
    # the holder starts with the default dispositions a user's process has, whatever this test process
    # inherited or was left with (an ignored SIGINT is inherited across exec, and Python then keeps ignoring it)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "job")], stdout=subprocess.PIPE, text=True,
                              preexec_fn=_default_signals)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(locks.Held) as held:
            locks.hold(tmp_path / "job")
        assert held.value.holder == str(holder.pid)
        assert f"in use by process {holder.pid}" in str(held.value)
    finally:
        holder.send_signal(sig)
        holder.wait(timeout=30)
    fd = locks.hold(tmp_path / "job")  # the kernel released it with its holder: no stale lock
    locks.release(fd)


@pytest.mark.slow  # a lock held by another process
def test_a_waiting_holder_gets_the_directory_when_its_holder_ends(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    told: list[str] = []
    got: list[int | None] = []
    try:
        assert holder.stdout.readline().strip() == "held"
        waiter = threading.Thread(target=lambda: got.append(locks.hold(tmp_path, wait=True, waiting=told.append)))
        waiter.start()
        _wait_for(lambda: told, 10, "the waiter to be told who holds the directory")
        assert told == [str(holder.pid)]
        time.sleep(0.3)
        assert not got, "the waiter took a held directory"
    finally:
        holder.kill()
        holder.wait()
    waiter.join(10)
    assert got and got[0] is not None, "the waiter never got the directory its holder left"
    locks.release(got[0])


# ---------------------------------------------------------------- a worker dies with its sweep

WORKER = """\
import sys, time
from pipeline import stages, sweep
sweep.update(driver_pid=int(sys.argv[1]))
stages._in_job = sys.argv[2] == "busy"
stages.watch_driver(grace=0.5, every=0.1)
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


# ---------------------------------------------------------------- through the command

SLOW_JOBS = """\
import os, time
if os.environ.get("BOUNDLAB_SLOW_JOB"):
    import pipeline.run
    original = pipeline.run.run
    def slow(*args, **kwargs):
        flag = os.environ.get("BOUNDLAB_SLOW_FLAG")
        if flag:
            open(flag + "." + str(os.getpid()), "w").close()
        time.sleep(float(os.environ["BOUNDLAB_SLOW_JOB"]))
        return original(*args, **kwargs)
    pipeline.run.run = slow
"""


def _command() -> list[str]:
    exe = Path(sys.executable).parent / "boundlab"
    return [str(exe)] if exe.exists() else ["boundlab"]


def _children(uri: str) -> Counter:
    """(run name, status) of the live child runs of every experiment in ``uri``."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=1000)
    return Counter((r.data.tags["mlflow.runName"], r.info.status) for r in runs if "mlflow.parentRunId" in r.data.tags)


@pytest.mark.slow
def test_two_identical_sweeps_started_together_run_each_job_once(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = with_sitecustomize(tmp_path, SLOW_JOBS, {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_SLOW_JOB": "2"})
    argv = [*_command(), "-m", "seed=0,1,2", "n=200", "d=5"]
    procs = [subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in outs)
    assert codes == [0, 1], outs
    (refused,) = [(err, other) for (code, _, err), other in zip(outs, reversed(procs)) if code == 1]
    err, other = refused
    assert err.count("\n") == 1 and err.startswith("boundlab: error: sweep directory "), err
    assert f"in use by process {other.pid}" in err
    assert _children(uri) == Counter({(f"perceptron seed={s} n=200 d=5", "FINISHED"): 1 for s in range(3)})


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


@pytest.mark.slow
def test_two_single_runs_started_together_get_their_own_directories(tmp_path: Path) -> None:
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    procs = [subprocess.Popen([*_command(), "n=200", "d=5", f"seed={s}"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for s in range(2)]
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read()
    runs = sorted(tmp_path.glob("outputs/*/*/results.parquet"))
    assert len(runs) == 2
    assert sorted(p.parent.name.rsplit("-", 1)[1] for p in runs) == sorted(str(p.pid) for p in procs)


@pytest.mark.slow
def test_a_run_into_a_held_directory_waits_for_its_holder(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    fd = locks.hold(run_dir)
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    proc = subprocess.Popen([*_command(), "n=200", "d=5", f"hydra.run.dir={run_dir}"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        log = run_dir / "cli.log"
        _wait_for(lambda: log.exists() and f"waiting for process {os.getpid()}" in log.read_text(), 300,
                  "the run to report that it waits")
        time.sleep(0.5)
        assert proc.poll() is None and not (run_dir / "results.parquet").exists()
    finally:
        locks.release(fd)
    assert proc.wait(timeout=300) == 0, proc.stderr.read()
    assert (run_dir / markers.MARKER).exists()


# ---------------------------------------------------------------- signals during long native calls

# A long call into C that releases the GIL and never checks for signals, as HiGHS, Clarabel or a numba
# kernel: OpenSSL's PBKDF2 with a huge iteration count (minutes); made where BOUNDLAB_NATIVE_AT names.
NATIVE_HANG = """\
import os
where = os.environ.get("BOUNDLAB_NATIVE_AT")
if where:
    import hashlib, importlib
    module_name, _, attr = where.partition(":")
    module = importlib.import_module(module_name)
    original = getattr(module, attr)
    def hang(*args, **kwargs):
        open(os.environ["BOUNDLAB_NATIVE_FLAG"] + "." + str(os.getpid()), "w").close()
        hashlib.pbkdf2_hmac("sha256", b"boundlab", b"salt", 500_000_000)
        return original(*args, **kwargs)
    setattr(module, attr, hang)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("where", "sig", "sweep"), [
    ("pipeline.solvers.max_margin:_separating_direction", signal.SIGTERM, True),  # the LP, before the job's run opens
    ("pipeline.solvers.max_margin:_separating_direction", signal.SIGINT, False),
    ("pipeline.run:run", signal.SIGINT, True),  # inside the job's open run
    ("pipeline.run:run", signal.SIGTERM, False),
])
def test_a_signal_during_a_long_native_call_stops_the_run_within_seconds(tmp_path: Path, svm_file: Path, where: str,
                                                                          sig: int, sweep: bool) -> None:
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cache, flag = tmp_path / "cache", tmp_path / "in-native-call"
    env = with_sitecustomize(tmp_path, NATIVE_HANG, {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(cache),
                                                     "BOUNDLAB_NATIVE_AT": where, "BOUNDLAB_NATIVE_FLAG": str(flag)})
    argv = [*_command(), *(["-m", "seed=0,1"] if sweep else []), "dataset=file", f"dataset.path={svm_file}", "name=native"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: list(tmp_path.glob("in-native-call.*")), 300, "the run to enter the native call")
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert code == 130 and took < 6, (code, took, err[-2000:])
    assert err.strip().splitlines()[-1] == (f"boundlab: stopped by {signal.Signals(sig).name} during a long native call; "
                                            "finished jobs are kept: run the same command to resume")
    runs = mlflow.MlflowClient(tracking_uri=uri).search_runs(
        [e.experiment_id for e in mlflow.MlflowClient(tracking_uri=uri).search_experiments()])
    # the sweep's parent and an open job run end KILLED (a single run stopped while preparing its data has none)
    assert len(runs) == int(sweep) + int(where == "pipeline.run:run")
    assert all(r.info.status == "KILLED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]
    if where == "pipeline.run:run":  # the job's run was open: it says why it ended
        (child,) = [r for r in runs if "mlflow.parentRunId" in r.data.tags] if sweep else runs
        assert f"{signal.Signals(sig).name} during a long native call" in child.data.tags["boundlab.error"]
    # no cache entry from the interrupted job, whole or partial
    assert not [p for p in cache.rglob("*") if p.is_file() and "lp-highs" in p.name and where.endswith("direction")]
    assert not list(cache.rglob("*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stopping_a_joblib_sweep_whose_workers_are_in_native_calls(tmp_path: Path, sig: int) -> None:
    """The driver stops at once; its workers are gone within seconds; every run it started ends KILLED."""
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = with_sitecustomize(tmp_path, NATIVE_HANG, {**os.environ, "MLFLOW_TRACKING_URI": uri,
                                                     "BOUNDLAB_NATIVE_AT": "pipeline.run:run",
                                                     "BOUNDLAB_NATIVE_FLAG": str(tmp_path / "in-native-call")})
    argv = [*_command(), "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=0,1,2", "n=100", "d=5"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: len(list(tmp_path.glob("in-native-call.*"))) == 2, 300, "two workers in a native call")
        workers = [int(p.name.rsplit(".", 1)[1]) for p in tmp_path.glob("in-native-call.*")]
        sent = time.monotonic()
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 130
        assert time.monotonic() - sent < 6
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _wait_for(lambda: not any(_alive(w) for w in workers), 15, "the workers to stop")
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 3 and all(r.info.status == "KILLED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]


def test_a_directory_this_process_already_holds_is_not_waited_for(tmp_path: Path) -> None:
    """A job directory that is the sweep directory (hydra.sweep.subdir=.) must not deadlock its own sweep."""
    first = locks.hold(tmp_path)
    assert first is not None
    assert locks.hold(tmp_path, wait=True) is None  # at once: no second lock on the same file
    locks.release(None)
    locks.release(first)
    again = locks.hold(tmp_path)  # released: held afresh
    assert again is not None
    locks.release(again)


SIGTERM_AFTER_FINISH = """\
import os
if os.environ.get("BOUNDLAB_TERM_IN_PUT"):
    import signal, time
    import pipeline.store
    def put(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # the job's run is FINISHED and its marker written
        time.sleep(5)
    pipeline.store.put = put
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
