"""Hydra's basic sweeper, minus the second composition of jobs boundlab's pre-flight has already checked.

Before a sweep starts, ``boundlab`` composes and validates every job (``pipeline.cli.preflight``: once per
choice of config groups, each job's values set on a copy) and records the jobs it validated
(``pipeline.sweep.vouch``). Hydra's basic sweeper would compose each job once more before launching it
(``validate_batch_is_legal``, ~0.1 s a job); this one skips that for a batch the pre-flight validated,
exactly as given, and validates any other batch as Hydra does. The launcher still composes every job it
runs. Selected in conf/config.yaml (``override hydra/sweeper: boundlab``); Hydra finds it in the
``hydra_plugins`` namespace package. tests/test_sweep.py fails if a Hydra release changes what it uses.
"""

from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore


@dataclass
class BoundlabSweeperConf:
    """The basic sweeper's fields (``BasicSweeperConf``), with this class as the target."""

    _target_: str = "hydra_plugins.boundlab_sweeper.boundlab_sweeper.BoundlabSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="boundlab", node=BoundlabSweeperConf, provider="boundlab")


class BoundlabSweeper(BasicSweeper):
    """Hydra's basic sweeper that trusts boundlab's pre-flight for the batches it validated."""

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        from pipeline import sweep

        if sweep.vouched(batch):
            return
        super().validate_batch_is_legal(batch)
