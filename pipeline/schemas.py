"""Config schemas generated from the code: every learner's and dataset's parameters with their code
defaults, registered in Hydra's ConfigStore as ``schema/GROUP/NAME``.

A group's YAML option extends its schema, so ``algorithm.passes=3`` is a plain override, ``--help``
shows every parameter with its default, and YAML holds only what differs from the code.
"""

from __future__ import annotations

import inspect

from omegaconf import MISSING


def node(cls: type) -> dict[str, object]:
    """``name`` plus each declared parameter with its constructor default (``???`` if required)."""
    signature = inspect.signature(cls.__init__).parameters
    out: dict[str, object] = {"name": cls.name}
    for p in cls.params:
        default = signature[p.name].default
        out[p.name] = MISSING if default is inspect.Parameter.empty else default
    return out


def register() -> None:
    """Store the schemas (idempotent)."""
    from hydra.core.config_store import ConfigStore

    from pipeline.data import DATASETS
    from pipeline.learners import LEARNERS

    cs = ConfigStore.instance()
    for group, registry in (("algorithm", LEARNERS), ("dataset", DATASETS)):
        for name, cls in registry.items():
            cs.store(group=f"schema/{group}", name=name, node=node(cls))
