"""pipeline.job.locks: one process per sweep directory and per job directory. A held directory is refused naming its
holder (or waited for) and freed by the kernel when its holder dies, however it dies; two identical sweeps
started together run each job once."""

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
from helpers import SLOW_JOBS, with_sitecustomize
from helpers import boundlab_command as _command
from helpers import live_children as _children
from helpers import wait_for as _wait_for

from pipeline.job import locks, markers

HOLDER = """\
import sys, time
from pathlib import Path
from pipeline.job import locks
fd = locks.hold(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(120)
"""


def _default_signals() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


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


# ---------------------------------------------------------------- through the command


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
