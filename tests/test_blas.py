"""A job's BLAS: one thread, unless the environment names a count (``pipeline.numerics.jobs_on_one_blas_thread``).

A job's matrices are small; OpenBLAS's thread per core mostly waits for them, spinning on the core another
process or a sweep's other worker needs (docs/performance.md, "BLAS in the jobs")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from pipeline import numerics


def _blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


@pytest.fixture
def two_threads(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A process whose BLAS runs two threads and has not set its jobs' limit yet; restored after."""
    for name in numerics.BLAS_ENV:
        monkeypatch.delenv(name, raising=False)
    kept: list = []
    monkeypatch.setattr(numerics, "_JOBS_BLAS", kept)
    with threadpool_limits(limits=2, user_api="blas"):
        if _blas_threads() != {2}:
            pytest.skip("this BLAS cannot be set to two threads")
        yield kept
        for limit in kept:
            limit.restore_original_limits()


def test_jobs_run_blas_on_one_thread_unless_the_environment_names_a_count(two_threads: list,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # the user's choice: kept
    numerics.jobs_on_one_blas_thread()
    assert _blas_threads() == {2} and not two_threads
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    numerics.jobs_on_one_blas_thread()
    assert _blas_threads() == {1} and len(two_threads) == 1
    numerics.jobs_on_one_blas_thread()  # once a process
    assert len(two_threads) == 1


@pytest.mark.e2e
def test_a_run_in_the_commands_process_computes_on_one_blas_thread(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   two_threads: list) -> None:
    """The basic launcher runs the jobs in the command's process: from its first job on, BLAS on one thread."""
    from pipeline.job import run as job_run

    seen: list[set[int]] = []
    real = job_run.run

    def recording(job, ds):  # noqa: ANN001, ANN202
        seen.append(_blas_threads())
        return real(job, ds)

    monkeypatch.setattr(job_run, "run", recording)
    env = {**{k: v for k, v in os.environ.items() if k not in numerics.BLAS_ENV},
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    proc = boundlab_in_process("n=100", "d=5", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seen == [{1}]
