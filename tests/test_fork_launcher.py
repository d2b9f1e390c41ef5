"""``hydra/launcher=fork``: a sweep's jobs on workers forked from the command (hydra_plugins/boundlab_sweeper).

What it must keep: the basic launcher's results bit for bit, every job run once, in workers other than the
command's process; an interrupt ends the workers and their runs KILLED (tests/test_interrupts.py, with the
joblib launcher's test); bad settings refused in one line (tests/test_preflight.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hydra_plugins.boundlab_sweeper.boundlab_sweeper import BoundlabForkLauncher
from pipeline import forks


@pytest.mark.parametrize(("n_jobs", "jobs", "cores", "workers"), [
    (-1, 8, 4, 4), (-2, 8, 4, 3), (-4, 8, 4, 1), (-9, 8, 4, 1), (2, 8, 4, 2), (6, 8, 2, 6), (-1, 3, 4, 3),
    (2, 1, 4, 1), (1, 8, 4, 1)])
def test_the_workers_follow_n_jobs_and_never_outnumber_the_jobs(monkeypatch: pytest.MonkeyPatch, n_jobs: int,
                                                                 jobs: int, cores: int, workers: int) -> None:
    monkeypatch.setattr(forks, "cores", lambda: cores)
    assert BoundlabForkLauncher(n_jobs=n_jobs).workers(jobs) == workers
    monkeypatch.setattr(forks, "available", lambda: False)  # Windows: the jobs run in the command's process
    assert BoundlabForkLauncher(n_jobs=n_jobs).workers(jobs) == 1


def test_a_forked_worker_has_plain_signals_and_its_share_of_blas() -> None:
    """A worker must not run the command's stop guard it inherited (its handlers, its wake-up pipe), and
    BLAS keeps to the worker's share of the cores: two workers that each keep a busy-waiting OpenBLAS thread
    per core ran at half speed."""
    import signal

    import gc

    from pipeline.sweep.interrupts import GC_THRESHOLD, seldom_collection

    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    read, write = os.pipe()
    os.set_blocking(write, False)
    old_fd = signal.set_wakeup_fd(write)
    threshold = gc.get_threshold()
    seldom_collection()  # as the command's start sets it
    try:
        pool = forks.pool(1, blas_threads=1)
        if pool is None:
            pytest.skip("no fork on this platform")
        with pool:
            handlers, blas, wakeup, collector = pool.submit(_worker_state).result()
    finally:
        gc.set_threshold(*threshold)
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGTERM, previous)
        os.close(read)
        os.close(write)
    assert handlers == (signal.SIG_DFL,) * 3 and wakeup == -1
    assert blas <= {1}
    # the command's collector pace, and what the worker inherited out of its collections' reach
    assert collector[0] == GC_THRESHOLD != threshold and collector[1] > 10_000


def _worker_state() -> tuple:
    """A worker's signal handlers, its BLAS thread counts, its wake-up fd and its cycle collector (thresholds,
    objects frozen)."""
    import signal

    from threadpoolctl import threadpool_info

    import gc

    handlers = tuple(signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    blas = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    return handlers, blas, signal.set_wakeup_fd(-1), (gc.get_threshold(), gc.get_freeze_count())


@pytest.mark.e2e
def test_a_forked_sweep_is_the_basic_launchers_bit_for_bit(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Four jobs on two forked workers: the same results, curves and verdicts, byte for byte, as the basic
    launcher's; each job run once, none of them in the command's process, in two workers. At d = 50 and n = 400
    the margin data's QR and product are large enough for OpenBLAS to thread them, and their bits followed the
    thread count (BLAS on every core in the command, one thread in each worker) until a job pinned it."""
    if forks.cores() < 2 or not forks.available():
        pytest.skip("one core, or no fork: the fork launcher runs the jobs in the command's process")
    from pipeline.job import run as job_run

    ran = tmp_path / "ran"
    ran.mkdir()
    real = job_run.measure  # a run's work, alone (a packed member) or within run()

    def recording(job, ds=None):  # noqa: ANN001, ANN202 - inherited by the forked workers
        (ran / f"{job.seed}.{os.getpid()}").touch()
        return real(job, ds)

    monkeypatch.setattr(job_run, "measure", recording)
    out = {}
    for launcher in ("fork", "basic"):
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / launcher}.db",
               "BOUNDLAB_CACHE": str(tmp_path / f"cache-{launcher}")}  # no job reused from the other sweep
        workers = ["hydra.launcher.n_jobs=2"] if launcher == "fork" else []
        proc = boundlab_in_process("-m", "seed=0,1,2,3", "n=400", "d=50", "algorithm=pegasos", "T=300",
                                   f"hydra/launcher={launcher}", *workers, f"hydra.sweep.dir={tmp_path / launcher}",
                                   cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[launcher] = {name: (tmp_path / launcher / name).read_bytes()
                         for name in ("results.parquet", "curves.parquet", "metrics.json")}
        if launcher == "fork":
            runs = sorted(p.name for p in ran.iterdir())
            for p in ran.iterdir():
                p.unlink()
    assert out["fork"] == out["basic"]
    seeds = [int(r.split(".")[0]) for r in runs]
    pids = {int(r.split(".")[1]) for r in runs}
    assert sorted(seeds) == [0, 1, 2, 3]  # each job once
    assert os.getpid() not in pids and len(pids) == 2, runs  # in two workers, not here


@pytest.mark.e2e
def test_a_forked_packed_sweep_reads_its_finished_parts_ahead_of_its_end(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Once no pack waits for a worker, the command reads the parts its packs finished (its end then takes them
    from there, each still the file it read): the same tables, byte for byte, as the basic launcher's."""
    if forks.cores() < 2 or not forks.available():
        pytest.skip("one core, or no fork: the fork launcher runs the jobs in the command's process")
    from pipeline.outputs import tables

    ahead: list[int] = []
    taken: list[str] = []
    read_ahead, read = tables.read_ahead, tables.read
    monkeypatch.setattr(tables, "read_ahead", lambda paths: (ahead.append(read_ahead(paths)), ahead[-1])[1])

    def reading(path):  # noqa: ANN001, ANN202
        held = tables._AHEAD.get(os.fspath(path))
        got = read(path)
        if held is not None and got is held[1]:  # the table read ahead, not read again
            taken.append(os.fspath(path))
        return got

    monkeypatch.setattr(tables, "read", reading)
    out = {}
    for launcher in ("fork", "basic"):
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / launcher}.db",
               "BOUNDLAB_CACHE": str(tmp_path / f"cache-{launcher}")}
        workers = ["hydra.launcher.n_jobs=2"] if launcher == "fork" else []
        proc = boundlab_in_process("-m", "seed=range(0,8)", "n=50", "d=3", "pack=1", f"hydra/launcher={launcher}",
                                   *workers, f"hydra.sweep.dir={tmp_path / launcher}", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[launcher] = {name: (tmp_path / launcher / name).read_bytes()
                         for name in ("results.parquet", "curves.parquet", "metrics.json")}
    assert out["fork"] == out["basic"]
    assert len(ahead) == 1 and ahead[0] >= 2 * 4  # at least 6 of the 8 packs were done: their results and curves
    assert len(taken) == ahead[0] and all("/fork/pack-" in t for t in taken)  # each taken by the end, once
    assert not tables._AHEAD


@pytest.mark.slow  # a worker killed from outside: the installed command, its forked workers
def test_a_worker_killed_from_outside_stops_the_sweep_in_one_line_and_the_rerun_completes_it(
        tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    """A worker that dies (the out-of-memory killer) stops the sweep with a line that says so; the jobs that
    finished are kept, and the same command resumes: only the rest run."""
    from helpers import with_sitecustomize

    kill = ("import os\n"
            "if os.environ.get('BOUNDLAB_KILL_SEED'):\n"
            "    import pipeline.job.run as r\n"
            "    real = r.run\n"
            "    def run(job, ds):\n"
            "        once = not os.path.exists(os.environ['BOUNDLAB_KILLED'])\n"
            "        if job.seed == int(os.environ['BOUNDLAB_KILL_SEED']) and once:\n"
            "            open(os.environ['BOUNDLAB_KILLED'], 'w').close()\n"
            "            os._exit(137)\n"
            "        return real(job, ds)\n"
            "    r.run = run\n")
    env = with_sitecustomize(tmp_path, kill, {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'm.db'}",
                                              "BOUNDLAB_CACHE": str(tmp_path / "cache"), "BOUNDLAB_KILL_SEED": "3",
                                              "BOUNDLAB_KILLED": str(tmp_path / "killed")})
    argv = ["-m", "seed=range(0,6)", "n=100", "d=5", "hydra/launcher=fork", "hydra.launcher.n_jobs=2"]
    first = boundlab(*argv, cwd=tmp_path, env=env)
    assert first.returncode != 0 and (tmp_path / "killed").exists()
    assert "a forked worker of hydra/launcher=fork died while it ran a job" in first.stderr, first.stderr[-3000:]
    assert "finished jobs are kept: run the same command to resume" in first.stderr
    again = boundlab(*argv, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    log = again.stdout + again.stderr
    kept = [line for line in log.splitlines() if "already done in" in line]
    assert "6 runs in" in log and 1 <= len(kept) < 6, log[-3000:]  # the finished jobs resumed, not run again
    assert not [line for line in kept if "seed=3 " in line]  # the killed worker's job runs again
