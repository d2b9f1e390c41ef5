"""Hydra's basic sweeper, minus the compositions a sweep's jobs share.

Two costs of Hydra's multirun grow with the number of jobs, and both are compositions of the config
(~0.1 s each with boundlab's groups):

- Before a sweep starts, ``boundlab`` composes and validates every job (``pipeline.cli.preflight``) and
  records the jobs it validated (``pipeline.sweep.vouch``). Hydra's basic sweeper would compose each job
  once more before launching it (``validate_batch_is_legal``); this one skips that for a batch the
  pre-flight validated, exactly as given, and validates any other batch as Hydra does.
- The launcher composes every job it runs (``ConfigLoader.load_sweep_config``). This sweeper hands the
  launcher a :class:`ComposeOnce` loader: jobs that differ only in plain ``key=value`` overrides share one
  composition of their config-group choices, copied per job, with the values applied by Hydra's own
  override code, and the job's override records filled as Hydra fills them. Anything else is composed by
  Hydra as before. tests/test_sweep.py checks the result equals Hydra's own, node for node.

Selected in conf/config.yaml (``override hydra/sweeper: boundlab``); Hydra finds it in the
``hydra_plugins`` namespace package. tests/test_sweep.py fails if a Hydra release changes what it uses.
"""

import copy
import uuid
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.types import HydraContext


@dataclass
class BoundlabSweeperConf:
    """The basic sweeper's fields (``BasicSweeperConf``), with this class as the target."""

    _target_: str = "hydra_plugins.boundlab_sweeper.boundlab_sweeper.BoundlabSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="boundlab", node=BoundlabSweeperConf, provider="boundlab")


class ComposeOnce:
    """A config loader for the launcher: one composition per choice of config groups, not one per job.

    Wraps Hydra's loader (every other call goes to it). ``load_sweep_config`` does what Hydra's does,
    ``load_configuration(master's hydra overrides + job overrides)`` then the master's resolver cache,
    with the composition itself taken from a per-process cache keyed by the job's non-plain overrides.
    A plain override (``key=value`` on a key that is not a config group, no ``+``/``~``/``@package``,
    not under ``hydra``) is exactly one of Hydra's "config overrides", which Hydra applies after
    composing, in order, with ``ConfigLoaderImpl._apply_overrides_to_config``: that is what is applied
    here to a deep copy. A job with any other kind of override is composed by Hydra.
    """

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.sweep = uuid.uuid4().hex  # the sweep this loader composes for, in whichever process it lands

    def __getattr__(self, name: str) -> Any:  # everything but load_sweep_config is Hydra's
        if name in ("loader", "sweep"):
            raise AttributeError(name)
        return getattr(self.loader, name)

    @property
    def _composed(self) -> Dict[Tuple[str, ...], Any]:
        """This process's compositions for this sweep. A launcher that ships the loader to its workers
        with each job (joblib pickles it per job) finds the worker's compositions of the same sweep
        here; a worker that moves on to another sweep drops the earlier one's."""
        from pipeline.sweep import COMPOSED  # not here: Hydra's plugin scan may run this module again

        if COMPOSED.get("sweep") != self.sweep:
            COMPOSED.clear()
            COMPOSED.update(sweep=self.sweep, configs={})
        return COMPOSED["configs"]

    def _plain(self, o: Any) -> bool:
        return (not (o.is_delete() or o.is_add() or o.is_force_add() or o.is_sweep_override())
                and o.package is None and not o.is_hydra_override() and not isinstance(o.value(), dict)
                and not self.loader.repository.group_exists(o.key_or_group))

    def load_sweep_config(self, master_config: Any, sweep_overrides: List[str]) -> Any:
        from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
        from hydra.types import RunMode
        from omegaconf import OmegaConf

        from pipeline.cli import parse_overrides  # each distinct line parsed once per process

        overrides = list(OmegaConf.to_container(master_config.hydra.overrides.hydra)) + list(sweep_overrides)
        parsed = parse_overrides(overrides)
        plain = [o for o in parsed if self._plain(o)]
        structural = [o.input_line for o in parsed if not self._plain(o)]
        key = (str(master_config.hydra.job.config_name), *structural)
        if key not in self._composed:
            with warnings.catch_warnings():  # a worker's first composition: the presets' schemas (pipeline.cli.main)
                warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/\w+' is validated against ConfigStore schema")
                self._composed[key] = self.loader.load_configuration(
                    config_name=master_config.hydra.job.config_name, overrides=structural, run_mode=RunMode.RUN)
        cfg = copy.deepcopy(self._composed[key])
        ConfigLoaderImpl._apply_overrides_to_config(plain, cfg)
        app = [o for o in parsed if not o.is_hydra_override()]
        cfg.hydra.overrides.hydra = [o.input_line for o in parsed if o.is_hydra_override()]
        cfg.hydra.overrides.task = [o.input_line for o in app]
        dirname = cfg.hydra.job.config.override_dirname
        cfg.hydra.job.override_dirname = get_overrides_dirname(
            overrides=app, kv_sep=dirname.kv_sep, item_sep=dirname.item_sep, exclude_keys=dirname.exclude_keys)
        OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
        return cfg


class BoundlabSweeper(BasicSweeper):
    """Hydra's basic sweeper that trusts boundlab's pre-flight for the batches it validated, and whose
    launcher composes once per choice of config groups (:class:`ComposeOnce`)."""

    def setup(self, *, hydra_context: HydraContext, task_function: Any, config: Any) -> None:
        shared = HydraContext(config_loader=ComposeOnce(hydra_context.config_loader), callbacks=hydra_context.callbacks)
        super().setup(hydra_context=shared, task_function=task_function, config=config)

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        from pipeline import sweep

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
    :func:`execute_job` hands a worker's registry on to its next jobs, then runs Hydra's own worker
    function. Everything else is the plugin's. tests/test_compose_once.py fails if that function changes.
    """

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        from hydra_plugins.hydra_joblib_launcher import _core

        hydras = _core.execute_job
        _core.execute_job = execute_job  # what _core.launch ships to the workers, by reference
        try:
            return _core.launch(launcher=self, job_overrides=job_overrides, initial_job_idx=initial_job_idx)
        finally:
            _core.execute_job = hydras


def execute_job(idx: int, overrides: Sequence[str], hydra_context: HydraContext, config: Any, task_function: Any,
                singleton_state: Dict[Any, Any]) -> Any:
    """Hydra's joblib worker function, with this worker's plugin registry kept from its previous job."""
    from hydra.core.plugins import Plugins
    from hydra.core.singleton import Singleton
    from hydra_plugins.hydra_joblib_launcher import _core

    kept = Singleton._instances.get(Plugins)
    if kept is not None:
        singleton_state = {**singleton_state, "instances": {**singleton_state["instances"], Plugins: kept}}
    run = _core.execute_job if _core.execute_job is not execute_job else _HYDRAS_EXECUTE_JOB
    return run(idx, overrides, hydra_context, config, task_function, singleton_state)


def _hydras_execute_job() -> Any:
    try:
        from hydra_plugins.hydra_joblib_launcher._core import execute_job as hydras
    except ImportError:
        return None
    return hydras


_HYDRAS_EXECUTE_JOB = _hydras_execute_job()
