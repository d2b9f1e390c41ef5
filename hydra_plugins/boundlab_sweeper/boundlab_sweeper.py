"""Hydra's basic sweeper, minus the compositions a sweep's jobs share.

Two costs of Hydra's multirun grow with the number of jobs, and both are compositions of the config
(~0.1 s each with boundlab's groups):

- Before a sweep starts, ``boundlab`` composes and validates every job (``pipeline.sweep.preflight.preflight``) and
  records the jobs it validated (``pipeline.sweep.context.vouch``). Hydra's basic sweeper would compose each job
  once more before launching it (``validate_batch_is_legal``); this one skips that for a batch the
  pre-flight validated, exactly as given, and validates any other batch as Hydra does.
- The launcher composes every job it runs (``ConfigLoader.load_sweep_config``). This sweeper hands the
  launcher a :class:`~pipeline.sweep.hydra_seam.ComposeOnce` loader: jobs that differ only in plain ``key=value``
  overrides share one composition of their config-group choices, copied per job, with the values applied
  by Hydra's own override code, and the job's override records filled as Hydra fills them. Anything else
  is composed by Hydra as before. tests/test_compose_once.py checks the result equals Hydra's own, node for
  node.

With ``pack=N`` (a packed sweep, ``pipeline.sweep.pack``), each batch of jobs is launched as packs of N
consecutive jobs: one Hydra job per pack, through the same launcher, its members in its own config. A pack
of jobs the pre-flight validated is trusted as its jobs are.

Selected in conf/config.yaml (``override hydra/sweeper: boundlab``); Hydra finds it in the
``hydra_plugins`` namespace package. What it needs of Hydra's private internals (the basic sweeper, the
joblib launcher's worker function) it takes from ``pipeline.sweep.hydra_seam``, the one module that touches them;
tests/test_sweep.py fails if a Hydra release changes what it uses.
"""

import logging
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext

from pipeline.sweep.hydra_seam import ComposeOnce, basic_sweeper, execute_job, launch_keeping_plugins

__all__ = ["BoundlabForkLauncher", "BoundlabJoblibLauncher", "BoundlabSweeper", "BoundlabSweeperConf", "ComposeOnce",
           "execute_job"]


# Jobs per batch of the in-process (basic) launcher, whose job configs are dropped after each. A batch holds
# ~0.1 MB a job until it returns: 100, not 500, took a sweep of 1,000 jobs from 554 to 495 MB at its peak, in
# the same time (103.4 s against 103.5 s; docs/performance.md, "Large sweeps").
LOCAL_BATCH = 100


@dataclass
class BoundlabSweeperConf:
    """The basic sweeper's fields (``BasicSweeperConf``), with this class as the target."""

    _target_: str = "hydra_plugins.boundlab_sweeper.boundlab_sweeper.BoundlabSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="boundlab", node=BoundlabSweeperConf, provider="boundlab")


class BoundlabSweeper(basic_sweeper()):  # type: ignore[misc]  # the class Hydra's module holds now
    """Hydra's basic sweeper that trusts boundlab's pre-flight for the batches it validated, and whose
    launcher composes once per choice of config groups (:class:`~pipeline.sweep.hydra_seam.ComposeOnce`)."""

    def setup(self, *, hydra_context: HydraContext, task_function: Any, config: Any) -> None:
        shared = HydraContext(config_loader=ComposeOnce(hydra_context.config_loader), callbacks=hydra_context.callbacks)
        super().setup(hydra_context=shared, task_function=task_function, config=config)
        # Less memory per job. Hydra's launchers return, for every job, its config and a deep copy of the
        # whole Hydra config (JobReturn.cfg, .hydra_cfg), and the basic sweeper keeps them to the sweep's
        # end: about half of the 0.26 MB a job by which a sweep's peak grew (docs/performance.md). Nothing
        # reads them after a batch (boundlab's callbacks read each job's files), so they are dropped as each
        # batch returns, and the in-process launcher gets batches of at most LOCAL_BATCH jobs (the job
        # numbers run on across batches; the pre-flight vouches for every job, so no batch is composed again).
        if self.max_batch_size is None and type(self.launcher).__name__ == "BasicLauncher":
            self.max_batch_size = LOCAL_BATCH
        launch = self.launcher.launch

        def launch_and_forget(job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
            results = launch(job_overrides, initial_job_idx)
            for r in results:
                r.cfg = r.hydra_cfg = None
            return results

        self.launcher.launch = launch_and_forget

    def get_job_batch(self) -> Sequence[Sequence[str]]:
        """The basic sweeper's next batch; with ``pack`` set, every job of the sweep as packs of ``pack``
        consecutive jobs, in one batch (pack K holds jobs K*pack to (K+1)*pack - 1, where the sweep's end
        reads them, so packs never follow ``max_batch_size``'s batches). In a round of ``seeds=auto`` the jobs
        are first ordered setting by setting (``pipeline.sweep.pack.by_setting``)."""
        n = self.config.get("pack") if self.config is not None else None
        if not n:
            return super().get_job_batch()
        from pipeline.sweep import pack, context as sweep

        jobs = [job for batch in self.overrides[self.batch_index:] for job in batch]
        self.batch_index = len(self.overrides)
        if self.config.get("seeds") == "auto":  # a round: each pack one block of one setting's seeds (reused later)
            jobs = pack.by_setting(jobs)
        packed = pack.packs_of(jobs, int(n))
        if sweep.vouched(jobs):  # the pre-flight composed and validated every member
            sweep.vouch(packed)
        return packed

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        from pipeline.sweep import context as sweep

        if sweep.vouched(batch):
            return
        super().validate_batch_is_legal(batch)


# ---------------------------------------------------------------- the joblib launcher

def _import_joblib_launcher() -> Any:
    try:
        from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
    except ImportError:  # the plugin is a dependency of boundlab; without it, Hydra reports the missing launcher
        from hydra.plugins.launcher import Launcher as JoblibLauncher
    return JoblibLauncher


class BoundlabJoblibLauncher(_import_joblib_launcher()):  # type: ignore[misc]
    """Hydra's joblib launcher (``hydra/launcher=joblib``: conf/hydra/launcher/joblib.yaml), whose
    workers keep the plugins they discovered for their first job.

    Hydra's worker function restores the driver's singletons for every job, and the plugin registry is
    not among them, so each job re-runs Hydra's plugin scan, executing every ``hydra_plugins`` module
    again (~50 ms a job, a third of a small job). The plugins installed do not change during a sweep:
    the workers run :func:`pipeline.sweep.hydra_seam.execute_job`, which hands a worker's registry on to its next
    jobs, then runs Hydra's own worker function. Everything else is the plugin's.
    tests/test_compose_once.py fails if that function changes.
    """

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        return launch_keeping_plugins(self, job_overrides, initial_job_idx)


# ---------------------------------------------------------------- forked workers

log = logging.getLogger(__name__)
_FORKED: list = []  # the launcher whose jobs the forked workers run: inherited through the fork, never pickled


class BoundlabForkLauncher(Launcher):
    """A sweep's jobs on ``n_jobs`` worker processes forked from the command (``hydra/launcher=fork``,
    conf/hydra/launcher/fork.yaml; Linux and macOS).

    A forked worker inherits what the command has loaded (Python's modules, the compiled kernels, the
    compositions of the pre-flight): it starts in milliseconds, where a joblib (loky) worker is a fresh
    interpreter that imports everything again (~3 s, and the kernels loaded once more). Each worker takes the
    next job as it finishes one; each job runs as the basic launcher runs it (Hydra's ``run_job``), so its
    directory, logs, results and MLflow run are the same, and the results bit for bit. ``n_jobs``: -1 for
    one per core (-2: all but one, ...), or a number of workers; never more than the jobs. With one worker,
    or where fork is not available, the jobs run in the command's process. An interrupt ends the workers at
    once (:func:`pipeline.forks.stop`); the command ends their runs KILLED, and the same command resumes.
    """

    def __init__(self, n_jobs: int = -1) -> None:
        super().__init__()
        self.n_jobs = n_jobs
        self.config: Any = None
        self.task_function: Any = None
        self.hydra_context: Any = None

    def setup(self, *, hydra_context: HydraContext, task_function: Any, config: Any) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def workers(self, jobs: int) -> int:
        from pipeline import forks

        wanted = self.n_jobs if self.n_jobs > 0 else max(1, forks.cores() + 1 + self.n_jobs)
        return min(wanted, jobs) if forks.available() else 1

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        from hydra.core.utils import configure_log, setup_globals

        from pipeline import forks

        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        jobs = [(initial_job_idx + i, tuple(overrides)) for i, overrides in enumerate(job_overrides)]
        workers = self.workers(len(jobs))
        log.info(f"Launching {len(jobs)} jobs on {workers} forked workers" if workers > 1
                 else f"Launching {len(jobs)} jobs locally")
        if workers == 1:
            return [self.run_one(idx, overrides) for idx, overrides in jobs]
        executor = forks.pool(workers, blas_threads=max(1, forks.cores() // workers))
        assert executor is not None
        _FORKED[:] = [self]
        try:
            futures = [executor.submit(_forked_job, idx, overrides) for idx, overrides in jobs]
            self.meanwhile(futures, workers)
            results = [f.result() for f in futures]
        except BrokenProcessPool:  # a worker killed from outside (the out-of-memory killer, a signal to it alone)
            forks.stop(executor)
            raise RuntimeError("a forked worker of hydra/launcher=fork died while it ran a job (killed from outside "
                               "this command: out of memory?); the other workers were stopped") from None
        except BaseException:
            forks.stop(executor)  # an interrupt: the workers end too (the command ends their runs KILLED)
            raise
        finally:
            _FORKED.clear()
        executor.shutdown(wait=True)
        return results

    def meanwhile(self, futures: list[Any], workers: int) -> None:
        """Wait until no job waits for a worker (each runs its last one, or idles), then let the sweep's end
        start on what those last jobs cannot change (``pipeline.sweep.callbacks.ahead_of_the_end``): the
        command's process idles otherwise while they run, and a core of the two is soon free."""
        from concurrent.futures import FIRST_COMPLETED, wait

        from pipeline.sweep import callbacks

        pending = set(futures)
        while len(pending) > workers:
            _, pending = wait(pending, return_when=FIRST_COMPLETED)
        callbacks.ahead_of_the_end(Path(str(self.config.hydra.sweep.dir)))

    def run_one(self, idx: int, overrides: Sequence[str]) -> Any:
        """One job, as Hydra's basic launcher runs it (its config, ``run_job``, the logging put back)."""
        from hydra.core.utils import configure_log, filter_overrides, run_job
        from omegaconf import open_dict

        from pipeline.sweep.pack import shown

        log.info(f"\t#{idx} : {' '.join(shown(filter_overrides(overrides)))}")
        sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = idx
            sweep_config.hydra.job.num = idx
        ret = run_job(hydra_context=self.hydra_context, task_function=self.task_function, config=sweep_config,
                      job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        ret.cfg = ret.hydra_cfg = None  # what the sweeper drops anyway (BoundlabSweeper.setup): not sent back
        return ret


def _forked_job(idx: int, overrides: Sequence[str]) -> Any:
    """A forked worker's job: the launcher it inherited runs it."""
    (launcher,) = _FORKED
    return launcher.run_one(idx, overrides)
