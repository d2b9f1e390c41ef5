"""pipeline.cli: the command. A sweep that dies outside every job (Hydra saving a config, the launcher, the sweep
directory) still ends its parent run FAILED and resumes; a closed terminal (SIGHUP) stops it like Ctrl-C; two
single runs started together get their own directories (the command's process id in the run token)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import signal_once_started
from helpers import boundlab_command as _command
from helpers import fault_env as _env
from helpers import sweep_runs as _runs


slow = pytest.mark.slow


def _no_run_left_running(uri: str, experiment: str) -> tuple[list, list]:
    parents, children = _runs(uri, experiment)
    assert parents and all(p.info.status != "RUNNING" for p in parents), [p.info.status for p in parents]
    assert all(c.info.status != "RUNNING" for c in children), [c.info.status for c in children]
    return parents, children


@pytest.mark.e2e
@pytest.mark.parametrize("where", ["hydra-saves-a-config", "the-launcher", "the-sweep-directory",
                                   "the-working-directory"])
def test_a_sweep_that_dies_before_its_end_ends_its_parent(tmp_path: Path, boundlab_in_process, where: str,  # noqa: ANN001
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault outside every job (a full disk while Hydra saves a job's config, a launcher that raises, a
    sweep directory gone mid-way, the command's working directory removed mid-way: one line, no traceback)
    stops the sweep before its end hook: the parent still ends FAILED, and the same command then resumes
    and finishes (from a directory that exists)."""
    import shutil

    import hydra.core.utils
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher

    uri, env = _env(tmp_path)
    cmd = ["-m", "seed=0,1,2", "n=50", "name=stranded", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    calls = [0]
    work = tmp_path / "work"  # the working directory of the first command
    work.mkdir()
    if where == "hydra-saves-a-config":
        original = hydra.core.utils._save_config

        def full(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            calls[0] += 1
            if calls[0] == 4:  # the second job's first file (three per job)
                raise OSError(28, "No space left on device")
            return original(*args, **kwargs)
        monkeypatch.setattr(hydra.core.utils, "_save_config", full)
    elif where == "the-launcher":
        def broken(self, job_overrides, initial_job_idx):  # noqa: ANN001, ANN202
            raise RuntimeError("the launcher cannot start its workers")
        monkeypatch.setattr(BasicLauncher, "launch", broken)
    elif where == "the-working-directory":
        import pipeline.sweep.stages

        original_job = pipeline.sweep.stages.job

        def removed(cfg):  # noqa: ANN001, ANN202
            calls[0] += 1
            if calls[0] == 2:
                shutil.rmtree(work)
            return original_job(cfg)
        monkeypatch.setattr(pipeline.sweep.stages, "job", removed)
    else:
        import pipeline.sweep.stages

        original_job = pipeline.sweep.stages.job

        def vanish(cfg):  # noqa: ANN001, ANN202
            calls[0] += 1
            if calls[0] == 2:
                raise OSError(2, "No such file or directory (the sweep directory was removed)")
            return original_job(cfg)
        monkeypatch.setattr(pipeline.sweep.stages, "job", vanish)
    done = boundlab_in_process(*cmd, cwd=work, env=env)
    assert done.returncode != 0
    assert "its parent run ended FAILED" in done.stderr and "run the same command to resume" in done.stderr, done.stderr[-2000:]
    if where == "the-working-directory":
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert f"the working directory {work} was removed while the command ran" in done.stderr
    parents, _ = _no_run_left_running(uri, "stranded")
    assert [p.info.status for p in parents] == ["FAILED"]
    monkeypatch.undo()
    again = boundlab_in_process(*cmd, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    parents, children = _no_run_left_running(uri, "stranded")
    assert [p.info.status for p in parents] == ["FINISHED"]
    assert sorted(c.info.status for c in children if c.info.lifecycle_stage == "active") == ["FINISHED"] * 3


@slow
def test_a_closed_terminal_sighup_stops_a_sweep_like_ctrl_c(tmp_path: Path) -> None:
    flag = tmp_path / "running"
    uri, env = _env(tmp_path, "pipeline.job.run:run", BOUNDLAB_FAULT_MODE="hang", BOUNDLAB_FAULT_FLAG=str(flag))
    code, err = signal_once_started(["-m", "seed=0,1", "n=50", "name=hangup", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                                    flag, signal.SIGHUP, tmp_path, env, timeout=60)  # once the job started
    assert code == 130 and "run the same command to resume" in err, err[-3000:]
    parents, children = _no_run_left_running(uri, "hangup")
    assert [p.info.status for p in parents] == ["KILLED"] and [c.info.status for c in children] == ["KILLED"]


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
    # the command ends without tearing its modules down (interrupts.quick_exit): what a normal exit does that
    # matters was done first: the log's last line written, the store's connections closed (no write-ahead
    # log left beside the database), both runs FINISHED in it
    logs = sorted(tmp_path.glob("outputs/*/*/cli.log"))
    assert len(logs) == 2 and all("(holds, ratio" in f.read_text().splitlines()[-1] for f in logs)
    assert sorted(f.name for f in tmp_path.glob("mlflow.db*")) == ["mlflow.db"]
    from mlflow import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    finished = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert sorted(r.info.status for r in finished) == ["FINISHED", "FINISHED"]
