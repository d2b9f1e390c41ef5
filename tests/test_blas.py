"""A job computes on one BLAS thread (``pipeline.numerics.jobs_on_one_blas_thread``, from ``pipeline.job.run``).

OpenBLAS's roundings can follow its thread count: the synthetic margin data at d = 50 differed in their last
bits between one thread and two (an AMD EPYC), so the basic launcher (BLAS on every core) and forked or joblib
workers (one thread each) computed on different data. Pinned to one thread, a job's bits are the same on every
launcher; and a job's small matrices gain nothing from a second thread that spins (docs/performance.md)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from pipeline import numerics


def _blas_threads(libraries: set[str] | None = None) -> set[int]:
    """The thread counts of the BLAS libraries loaded (of ``libraries``, by path, when given)."""
    return {i["num_threads"] for i in threadpool_info()
            if i["user_api"] == "blas" and (libraries is None or i["filepath"] in libraries)}


@pytest.fixture
def two_threads(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A process whose BLAS runs two threads and has not set its jobs' limit yet: the libraries (paths) that
    took two threads (another package's OpenBLAS built for one thread may be loaded too); restored after."""
    import scipy.linalg  # noqa: F401 - scipy's OpenBLAS beside numpy's, as in a job

    kept: list = []
    monkeypatch.setattr(numerics, "_JOBS_BLAS", kept)
    with threadpool_limits(limits=2, user_api="blas"):
        two = {i["filepath"] for i in threadpool_info() if i["user_api"] == "blas" and i["num_threads"] == 2}
        if not two:
            pytest.skip("no BLAS library here can be set to two threads")
        yield two
        for limit in kept:
            limit.restore_original_limits()


def test_jobs_run_blas_on_one_thread_whatever_the_environment_asks(two_threads: set,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # read by OpenBLAS when loaded: a job's bits must not follow it
    numerics.jobs_on_one_blas_thread()
    assert _blas_threads(two_threads) == {1} and len(numerics._JOBS_BLAS) == 1
    numerics.jobs_on_one_blas_thread()  # once a process
    assert len(numerics._JOBS_BLAS) == 1


def _data(job) -> str:  # noqa: ANN001
    from pipeline.job.run import prepare

    ds = prepare(job)
    return hashlib.sha256(np.ascontiguousarray(ds.X).tobytes() + np.ascontiguousarray(ds.y).tobytes()).hexdigest()


def test_a_jobs_data_are_the_same_bits_whatever_blas_thread_count_the_process_had(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The margin data at d = 50 (a QR of a 50 x 50 Gaussian, a product with its columns), prepared by a process
    whose BLAS had one thread and by one whose BLAS had two: the same bytes."""
    from hydra import initialize_config_dir

    from pipeline.job.config import build
    from pipeline.paths import CONF_DIR
    from pipeline.sweep import hydra_seam
    from pipeline.sweep.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        jobs = [build(hydra_seam.Composer()([f"d={d}", "n=400", "gamma=0.05", f"seed={s}"]))
                for d in (50, 120) for s in (0, 1)]
    hashes = []
    for threads in (1, 2):
        kept: list = []
        monkeypatch.setattr(numerics, "_JOBS_BLAS", kept)
        with threadpool_limits(limits=threads, user_api="blas"):
            hashes.append([_data(job) for job in jobs])
            for limit in kept:
                limit.restore_original_limits()
    assert hashes[0] == hashes[1]


@pytest.mark.e2e
def test_a_run_in_the_commands_process_computes_on_one_blas_thread(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   two_threads: set) -> None:
    """The basic launcher runs the jobs in the command's process: from its first job on, BLAS on one thread."""
    from pipeline.job import run as job_run

    seen: list[set[int]] = []
    real = job_run.complete

    def recording(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the statistics of the run, in the job
        seen.append(_blas_threads(two_threads))
        return real(*args, **kwargs)

    monkeypatch.setattr(job_run, "complete", recording)
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    proc = boundlab_in_process("n=100", "d=5", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seen == [{1}]
