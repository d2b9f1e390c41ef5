"""Worker processes forked from this one: they inherit its imported modules, its compiled kernels and its
tables, so they start in milliseconds (a fresh interpreter pays ~3 s of imports first).

Used for the figures' second core (:mod:`pipeline.outputs.plots`, the report's palette PNGs) and for a sweep's
jobs on several cores (``hydra/launcher=fork``, hydra_plugins/boundlab_sweeper). A forked worker takes
Ctrl-C, SIGTERM and SIGHUP as a plain process does (it dies at once): the command's stop guard, inherited
through the fork, ends runs and is the command's alone, and its wake-up pipe must never be written from here.
SQLite connections are never carried across (``pipeline.tracking.clients`` closes its idle ones before any
fork).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def available() -> bool:
    """Whether this platform can fork (not Windows)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def plain_signals() -> None:
    """A forked worker's start: the default handlers, and no wake-up pipe (the command's stop guard reads the
    one the fork handed down: a signal here must never wake it)."""
    import signal

    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _start(blas_threads: int | None) -> None:
    """A forked worker's start: :func:`plain_signals`, the objects it inherited out of the cycle collector's
    reach (``gc.freeze``: the parent's modules and configs, alive for the worker's life, are never scanned again
    by its collections; a full one of them cost ~0.2 s), and BLAS on at most ``blas_threads`` threads."""
    import gc

    plain_signals()
    gc.freeze()
    if blas_threads is not None:
        from threadpoolctl import threadpool_limits  # a dependency (scikit-learn's too)

        threadpool_limits(limits=blas_threads, user_api="blas")  # for the worker's life


def pool(workers: int, blas_threads: int | None = None) -> ProcessPoolExecutor | None:
    """A pool of ``workers`` processes forked from this one (each at its first task), with plain signals and,
    given ``blas_threads``, BLAS on that many threads each; None where fork is not available or ``workers`` < 1.

    Workers that each keep OpenBLAS's thread per core oversubscribe the cores: OpenBLAS's threads wait busily,
    and two workers on two cores ran a packed Pegasos round at half speed each. Where a result depends on
    the thread count, the code asks for one thread itself (``pipeline.numerics.single_thread``)."""
    import functools
    import multiprocessing

    if workers < 1 or not available():
        return None
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=functools.partial(_start, blas_threads))


def stop(executor: ProcessPoolExecutor) -> None:
    """End a pool at once (an interrupt): its workers terminated, its queued tasks dropped."""
    import multiprocessing

    for child in multiprocessing.active_children():  # this process's children: the pool's workers among them
        child.terminate()
    executor.shutdown(wait=True, cancel_futures=True)
