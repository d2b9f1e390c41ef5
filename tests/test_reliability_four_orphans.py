"""Issue 50 (reliability, round four), classes 9 and 10 (in part): nothing a dead process left stays behind,
and ``seeds=auto force=true`` reruns each seed once.

9. A sweep's parent run that its process left RUNNING (a SIGKILL, a ``seeds=auto`` round killed and the command
   rerun with another grid, so that nothing resumes that round's directory) is ended KILLED by the next sweep of
   the experiment: its directory's lock is free, so no live process runs it (pipeline.tracking.end_orphaned_parents).
   A parent whose sweep still runs (its lock held), or whose directory is not on this machine, is left alone.
   The temporary files and staging directories of dead processes carry their pid (``.NAME.PID.tmp``) and are
   removed by the next writer of their directory (pipeline.files.clean_stale): the report's staging directory, a
   sweep's aggregation directory. The report stops cleanly on SIGTERM (exit 130, its staging removed).
10. ``seeds=auto force=true`` reruns each seed once per command (pipeline.sweep.context.forces); a report of every
   experiment names the results it leaves out (an experiment removed while its results stay).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import INJECTOR, all_runs, migrated_store, tiny_results, with_sitecustomize

from pipeline import files, tracking
from pipeline.job import locks


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(proc.stdout)


# --------------------------------------------------------------------------- 9. parents left RUNNING


def _running_parent(uri: str, experiment: str, sweep_dir: Path) -> str:
    return tracking.runs.start_parent(uri, experiment=experiment, name="a killed sweep", question="q", sweep_id="killed",
                                 tags={"boundlab.sweep_dir": str(sweep_dir.resolve())})


def test_a_parent_whose_sweep_process_is_gone_is_ended_killed(tmp_path: Path) -> None:
    """Three RUNNING parents: one whose directory's lock is free (its process died: ended KILLED, with its
    RUNNING child), one whose lock a live process holds (a sweep running now: left), one whose directory is not
    here (another machine's: left)."""
    import mlflow

    uri = migrated_store(tmp_path / "mlflow.db")
    dead, live, elsewhere = tmp_path / "dead", tmp_path / "live", tmp_path / "no" / "such"
    dead.mkdir()
    locks.release(locks.hold(dead))  # a lock file its holder no longer holds: what a killed sweep leaves
    held = locks.hold(live)
    ids = {name: _running_parent(uri, "exp", where) for name, where in
           (("dead", dead), ("live", live), ("elsewhere", elsewhere))}
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name("exp").experiment_id
    child = client.create_run(exp, tags={"mlflow.parentRunId": ids["dead"]}).info.run_id
    try:
        assert locks.is_held(live) is True and locks.is_held(dead) is False and locks.is_held(elsewhere) is None
        ended = tracking.runs.end_orphaned_parents(uri, "exp", tmp_path / "mine")
        assert ended == [ids["dead"]]
        assert client.get_run(ids["dead"]).info.status == "KILLED"
        assert "process ended without ending it" in client.get_run(ids["dead"]).data.tags["boundlab.error"]
        assert client.get_run(child).info.status == "KILLED"
        assert client.get_run(ids["live"]).info.status == "RUNNING"
        assert client.get_run(ids["elsewhere"]).info.status == "RUNNING"
        assert tracking.runs.end_orphaned_parents(uri, "exp", dead) == []  # the sweep starting in its own directory
        assert tracking.runs.end_orphaned_parents(uri, "other", tmp_path) == []  # another experiment: not its business
    finally:
        locks.release(held)


def test_the_probe_never_takes_a_held_lock(tmp_path: Path) -> None:
    """is_held only looks: the holder keeps its lock, and a free lock stays free after the probe."""
    fd = locks.hold(tmp_path / "d")
    assert locks.is_held(tmp_path / "d") is True
    locks.release(fd)
    assert locks.is_held(tmp_path / "d") is False
    again = locks.hold(tmp_path / "d")  # free after the probe
    locks.release(again)
    (tmp_path / "e").mkdir()
    os.symlink(tmp_path / "d" / locks.LOCK, tmp_path / "e" / locks.LOCK)
    assert locks.is_held(tmp_path / "e") is None  # a link where the lock belongs is not followed


@pytest.mark.e2e  # two sweeps, in the test process
def test_a_killed_round_s_parent_is_ended_by_the_next_sweep(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    """A sweep whose parent a killed process left RUNNING in another directory (another grid): the next sweep of
    the experiment ends it KILLED and says so; its own parent ends FINISHED."""
    uri = migrated_store(tmp_path / "mlflow.db")
    gone = tmp_path / "multirun" / "gone"
    gone.mkdir(parents=True)
    locks.release(locks.hold(gone))
    orphan = _running_parent(uri, "orphans", gone)
    proc = boundlab_in_process("-m", "seed=0,1", "n=30", "d=3", "name=orphans", f"hydra.sweep.dir={tmp_path / 'now'}",
                               cwd=tmp_path, env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "left RUNNING by a process that is gone" in proc.stderr + proc.stdout
    status = {r.info.run_id: r.info.status for r in all_runs(uri, "orphans")}
    assert status[orphan] == "KILLED"
    assert "RUNNING" not in status.values(), status


# --------------------------------------------------------------------------- 9. temporaries of dead processes


@pytest.mark.slow  # a process started and waited for: a dead pid
def test_a_dead_report_s_staging_directory_is_removed_by_the_next(tmp_path: Path, in_process) -> None:  # noqa: ANN001
    from pipeline.outputs import report

    tiny_results(tmp_path / "results" / "tiny", "tiny")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "tiny.yaml").write_text("name: tiny\nquestion: q\nclaims: []\n")
    pid = _dead_pid()
    stale = tmp_path / "report" / f".staging-abc123.{pid}.tmp"
    (stale / "figures").mkdir(parents=True)
    alive = tmp_path / "report" / f".staging-def456.{os.getppid()}.tmp"  # a live process's: left alone
    alive.mkdir()
    old_style = tmp_path / "report" / f".index.html.{pid}.tmp"
    old_style.write_text("half")
    proc = in_process(lambda: report.main(["tiny"]), cwd=tmp_path,
                      env={**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"})
    assert proc.returncode in (0, 3), proc.stderr
    assert not stale.exists() and not old_style.exists()
    assert alive.exists()
    assert not [p for p in (tmp_path / "report").glob(".staging-*") if p != alive]  # its own staging is gone too


@pytest.mark.slow  # the report in a process, signalled
def test_a_report_stopped_by_sigterm_leaves_no_staging_directory(tmp_path: Path) -> None:
    """SIGTERM while the report reads the results (inside its staging directory's life): exit 130, one line,
    no traceback, no staging directory, and no report run left RUNNING."""
    tiny_results(tmp_path / "results" / "tiny", "tiny")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "tiny.yaml").write_text("name: tiny\nquestion: q\nclaims: []\n")
    flag = tmp_path / "hanging"
    env = with_sitecustomize(tmp_path, INJECTOR, {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'db'}",
                                                  "BOUNDLAB_FAULT": "pandas:read_parquet", "BOUNDLAB_FAULT_MODE": "hang",
                                                  "BOUNDLAB_FAULT_FLAG": str(flag)})
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.outputs.report", "tiny"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not flag.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert flag.exists(), proc.communicate()[1][-3000:]
    assert list((tmp_path / "report").glob(".staging-*"))  # the stop lands while the staging directory exists
    t0 = time.time()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert time.time() - t0 < 10
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err and len(err.strip().splitlines()) == 1, err
    assert not list((tmp_path / "report").glob(".staging-*"))


@pytest.mark.slow  # a report in another process holds the lock
def test_a_second_report_at_once_is_refused_in_one_line(tmp_path: Path, in_process) -> None:  # noqa: ANN001
    from pipeline.outputs import report

    tiny_results(tmp_path / "results" / "tiny", "tiny")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "tiny.yaml").write_text("name: tiny\nquestion: q\nclaims: []\n")
    probe = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                              "from pipeline.job import locks; locks.hold(Path(sys.argv[1])); print('held', flush=True); "
                              "time.sleep(60)", str(tmp_path / "report")], stdout=subprocess.PIPE, text=True)
    try:
        assert probe.stdout.readline().strip() == "held"
        proc = in_process(lambda: report.main(["tiny"]), cwd=tmp_path, env=dict(os.environ))
    finally:
        probe.kill()
        probe.wait()
    assert proc.returncode == 1
    assert "is being written by another report" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # a process started and waited for: a dead pid
def test_clean_stale_keeps_live_and_foreign_names(tmp_path: Path) -> None:
    pid = _dead_pid()
    dead = [tmp_path / f".a.{pid}.tmp", tmp_path / f".staging-x1.{pid}.tmp"]
    dead[0].write_text("x")
    dead[1].mkdir()
    kept = [tmp_path / f".b.{os.getpid()}.tmp", tmp_path / "c.tmp", tmp_path / f".d.{os.getppid()}.tmp"]
    for p in kept:
        p.write_text("x")
    assert files.clean_stale(tmp_path) == 2
    assert not any(p.exists() for p in dead) and all(p.exists() for p in kept)


# --------------------------------------------------------------------------- 10. results whose experiment is gone


@pytest.mark.e2e  # the report end to end, in the test process
@pytest.mark.parametrize("removed", [["gone"], ["gone", "also_gone"]])
def test_a_report_names_the_results_it_leaves_out(tmp_path: Path, in_process, removed: list[str]) -> None:  # noqa: ANN001
    from pipeline.outputs import report

    (tmp_path / "experiments").mkdir()
    for name in removed:
        tiny_results(tmp_path / "results" / name, name)
    proc = in_process(lambda: report.main([]), cwd=tmp_path,
                      env={**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"})
    for name in removed:
        assert f"results/{name}" in proc.stderr, proc.stderr
    assert "removed or renamed" in proc.stderr and "no experiment has results" in proc.stderr


@pytest.mark.e2e  # the report end to end, in the test process
def test_a_report_with_some_experiments_still_names_the_orphans(tmp_path: Path, in_process) -> None:  # noqa: ANN001
    from pipeline.outputs import report

    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "kept.yaml").write_text("name: kept\nquestion: q\nclaims: []\n")
    tiny_results(tmp_path / "results" / "kept", "kept")
    tiny_results(tmp_path / "results" / "gone", "gone")
    proc = in_process(lambda: report.main([]), cwd=tmp_path,
                      env={**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"})
    assert "left out results/gone" in proc.stderr and "no experiment has results" not in proc.stderr
    assert "1 experiment," in proc.stdout


# --------------------------------------------------------------------------- 10. seeds=auto force=true


@pytest.mark.e2e  # two seed rounds of sweeps, in the test process
def test_seeds_auto_force_reruns_each_seed_once(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Three rounds of 2 seeds under force=true (the rounds kept going whatever the verdicts): 6 jobs run, not
    2 + 4 + 6 = 12; the earlier rounds' seeds are reused in each later round."""
    from pipeline import cli

    monkeypatch.setattr(cli, "_open_claims", lambda last: ["b"])  # never decided: every round runs
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    first = boundlab_in_process("-m", "seeds=auto", "seed_budget=4", "seed_round=2", "n=30", "d=3", "name=forced",
                                cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    proc = boundlab_in_process("-m", "seeds=auto", "seed_budget=6", "seed_round=2", "n=30", "d=3", "name=forced",
                               "force=true", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert out.count("round ") >= 3, out[-3000:]
    skipped = out.count("skipped (force=true reruns it)") + out.count("reused, not rerun")
    assert skipped == 2 + 4, out[-5000:]  # round 2 reuses seeds 0-1, round 3 seeds 0-3
    finished = [r for r in all_runs(uri, "forced") if "mlflow.parentRunId" in r.data.tags and r.info.status == "FINISHED"
                and r.info.lifecycle_stage == "active"]
    assert len(finished) >= 6


def test_every_temporary_in_a_kept_directory_carries_its_pid() -> None:
    """The class, not the examples: every temporary file or directory the package creates inside a directory it
    keeps (``dir=...``) is named ``....PID.tmp``, so the next writer there can tell a dead process's from a live
    one's (pipeline.files.clean_stale). A new call without the pid fails here."""
    import re

    root = Path(__file__).resolve().parents[1] / "pipeline"
    offenders = []
    for path in root.rglob("*.py"):
        text = path.read_text()
        for m in re.finditer(r"(mkdtemp|mkstemp|NamedTemporaryFile|TemporaryDirectory)\(([^()]*(\([^()]*\))?[^()]*)\)", text):
            args = m.group(2)
            if "dir=" in args and "getpid()" not in args:
                offenders.append(f"{path.relative_to(root.parent)}: {m.group(0)}")
    assert not offenders, offenders
