"""One job process's lifecycle, for both of its bodies: a job (:class:`pipeline.sweep.stages.JobLife`) and a
pack of jobs (:class:`pipeline.sweep.pack.PackLife`).

:class:`Place` is everything the lifecycle takes from Hydra's global config (the job's directory, whether it
runs in a sweep, its number there, the command's overrides), read once by :meth:`Place.from_hydra` or given
directly, so a lifecycle runs and is tested without Hydra. :class:`Life` is the frame both bodies share, as a
context manager: the process is marked as inside a job (what the driver watchdog interrupts, in a sweep's
worker), the job's directory is held against a twin process, a fault is recorded once by the body's
:meth:`Life.failed` (in a sweep it is swallowed so the sweep goes on; its end reports it), an interrupt ends
the body's open run KILLED and propagates, and whatever was held is released on the way out.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("boundlab")


@dataclass(frozen=True)
class Place:
    """Where a job runs and how it was launched: ``out`` its output directory, ``multirun`` whether it is a
    sweep's job, ``sweep_dir`` the sweep's directory (None outside a sweep), ``num`` its number in the sweep and
    ``overrides`` the command's overrides for it (Hydra's ``overrides.task``)."""

    out: Path
    multirun: bool = False
    sweep_dir: Path | None = None
    num: int = 0
    overrides: tuple[str, ...] = ()

    @classmethod
    def from_hydra(cls) -> Place:
        """The running Hydra job's place (Hydra's global config, read once here and nowhere else)."""
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
        multirun = hc.mode == RunMode.MULTIRUN
        return cls(Path(hc.runtime.output_dir), multirun, Path(hc.sweep.dir) if multirun else None,
                   int(hc.job.num) if multirun else 0, tuple(hc.overrides.task))  # a single run has no number


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


_watching: list[int] = []  # the driver this worker process watches (started once per process)
_in_job = False  # whether this process is inside job() (the watchdog interrupts it, or exits at once)


def watch_driver(grace: float = 5.0, every: float = 0.5) -> None:
    """In a sweep's worker process (joblib/loky), stop when the command's process is gone.

    A worker whose sweep died (killed, crashed) would otherwise finish jobs the rerun runs again. A
    daemon thread checks the driver (the sweep context's ``driver_pid``, set by the command) every ``every`` s;
    once it is gone, an idle worker exits at once, and a running job is interrupted like Ctrl-C (its
    run ends KILLED, no marker is written) and the worker exits ``grace`` s later whatever it is doing
    (a long native call). Does nothing in the driver's own process or without a driver.
    """
    import _thread
    import signal
    import threading

    from pipeline.sweep import context as sweep, interrupts

    driver = sweep.current().driver_pid
    if driver is None or driver == os.getpid() or _watching:
        return
    _watching.append(driver)
    # Python's own handler raises anywhere; this one waits for a call into omegaconf or MLflow to return
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupts.Handler())

    def watch() -> None:
        while _alive(driver):
            time.sleep(every)
        log.error("the sweep's process %s is gone: this worker (process %d) stops", driver, os.getpid())
        if _in_job:
            _thread.interrupt_main()
            time.sleep(grace)
            from pipeline import tracking

            tracking.end_open_runs(f"the sweep's process {driver} ended while this job ran")  # still in a native call
        os._exit(1)

    threading.Thread(target=watch, name="boundlab-driver-watch", daemon=True).start()


def set_in_job(inside: bool) -> None:
    """Mark this process as inside a job (True) or between jobs (False): what :func:`watch_driver` does when
    the driver is gone (:class:`Life` marks it for both bodies)."""
    global _in_job
    _in_job = inside


class Life:
    """The frame of one job process's lifecycle, for a body that subclasses it (a job, a pack): ``with`` marks
    the process as inside a job (and, in a sweep's worker, watches the command's process), :meth:`hold` holds
    the job's directory, a fault inside is handed to :meth:`failed` (True: swallowed), an interrupt ends the
    open run (``tracker``) KILLED and propagates, and the held locks are released on the way out."""

    label = "job"

    def __init__(self, place: Place) -> None:
        self.place = place
        self.out = place.out
        self.multirun = place.multirun
        self.tracker: Any = None  # the body's open MLflow run, once it has one
        self._held: list[Any] = []

    def __enter__(self) -> Life:
        if self.multirun:
            watch_driver()
        set_in_job(True)
        return self

    def hold(self, path: Path | None = None) -> None:
        """Hold the job's directory (``path``, else :attr:`out`) against a twin process, waiting for one."""
        from pipeline.job import locks

        where = self.out if path is None else path
        self._held.append(locks.hold(where, wait=True, waiting=lambda pid: log.warning(
            "%s: waiting for process %s, which holds %s", self.label, pid, where)))

    def keep(self, held: Any) -> None:
        """Release ``held`` (a lock taken by the body) with the job's own on the way out."""
        self._held.append(held)

    def failed(self, e: Exception) -> bool:  # pragma: no cover - each body records its own
        """Record a fault of the body; True to swallow it (the sweep goes on), False to raise it."""
        raise NotImplementedError

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: Any) -> bool:
        from pipeline import tracking
        from pipeline.job import locks

        try:
            if isinstance(e, Exception):
                return self.failed(e)
            if isinstance(e, KeyboardInterrupt):
                # a run already ended FINISHED stays so: its marker may be written, and the rerun then skips the job
                if self.tracker is not None and self.tracker.run_id in tracking.OPEN_RUNS:
                    self.tracker.fail(e)
            return False
        finally:
            set_in_job(False)
            for held in reversed(self._held):
                locks.release(held)
