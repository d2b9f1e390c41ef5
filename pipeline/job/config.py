"""From a composed Hydra config to validated objects: the job's learner, dataset and seeds.

Config keys are constructor argument names; the ``name`` key of the ``algorithm`` and ``dataset``
groups picks the class from its registry. Validation uses the classes' own parameter specs, and an
error names the key the user typed (``gamma``, not ``dataset.gamma``, when the group interpolates it).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pipeline.params import LAM, Param, ParamError, at_least

# A name becomes a directory (multirun/NAME) and an MLflow experiment: a plain name, never a path.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")
NAME_ALLOWED = "a plain name: 1-100 letters, digits, '_', '-' or '.', not starting with '.' (no '/', no '..')"


def is_name(value: object) -> bool:
    """True for a value that is safe as a directory and experiment name (``NAME_PATTERN``, no '..')."""
    return isinstance(value, str) and NAME_PATTERN.fullmatch(value) is not None and ".." not in value


NAME = Param("name", str, is_name, NAME_ALLOWED)

# Top-level keys validated for every job. ``lam`` is a sweep key the groups interpolate (``algorithm.lam:
# ${lam}``): it reaches a run only through the learners that declare a ``lam`` parameter, so it is checked
# here (a bad value fails in one line whatever the learner) but is no part of a job (Job.params).
TOP_LEVEL = (
    Param("seed", int, at_least(0)),
    LAM,  # the one rule of every learner that declares lam (pipeline.params.LAM)
    Param("force", bool, lambda v: True, "true or false (true reruns jobs already done)"),
    Param("seeds", str, lambda v: v in ("fixed", "auto"),
          "fixed (the seeds seed= names) or auto (a sweep adds seeds in rounds until its claims are decided)",
          nullable=True),
    Param("seed_budget", int, lambda v: 1 <= v <= 100_000, "an integer from 1 to 100000 (the most seeds per setting)",
          nullable=True),
    Param("seed_round", int, lambda v: v >= 1, "an integer >= 1 (seeds added per round)", nullable=True),
    Param("seed_minutes", float, lambda v: 0 < v <= 10_080,
          "null (no limit) or a number of minutes in (0, 10080] (seeds=auto starts no round it expects to end later)",
          nullable=True),
    Param("pack", int, at_least(1), "null (one Hydra job per setting) or an integer >= 1 (a sweep runs this many "
          "settings per job: docs/sweeps.md, \"Large grids\")", nullable=True),
)


@dataclass
class Job:
    """Everything one run needs: the experiment name, seeds, the learner and the dataset generator."""

    experiment: str
    seed: int
    learner: Any
    dataset: Any
    force: bool = False

    def params(self) -> dict[str, Any]:
        """The effective parameters of the run (code defaults included), as table columns: the seed and what
        the dataset and the learner declare, nothing they do not read."""
        return {"seed": self.seed, **self.dataset.get_params(), **self.learner.get_params()}

    def key(self, *, seeded: bool = True) -> str:
        """Content hash of what determines the run's results: learner, dataset and parameters.
        ``seeded=False`` leaves the seed out: the setting that runs over seeds repeat."""
        params = self.params() if seeded else {k: v for k, v in self.params().items() if k != "seed"}
        spec = {"learner": self.learner.name, "dataset": self.dataset.name, **params}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def _user_key(node: DictConfig, group: str, key: str) -> str:
    """The key a user sets: the top-level key a group entry interpolates (``${gamma}``), or group.key."""
    raw = OmegaConf.to_container(node, resolve=False).get(key)
    if isinstance(raw, str) and raw.startswith("${") and raw.endswith("}") and raw.count("$") == 1:
        return raw[2:-1]
    return f"{group}.{key}"


def _make(registry: Any, node: DictConfig, group: str) -> Any:
    """The ``group``'s object named by ``node.name``, from ``registry`` (a :class:`pipeline.plugins.Registry`:
    a plug-in that fails to import raises its one-line :class:`pipeline.plugins.PluginError` here)."""
    name = node.get("name")
    if name not in registry:
        raise ParamError(group, name, f"one of {', '.join(sorted(registry))}")
    cls = registry[name]
    allowed = [p.name for p in cls.params]
    kwargs = {k: node[k] for k in node if k != "name"}
    for k in kwargs:
        if k not in allowed:
            close = difflib.get_close_matches(k, allowed, n=3)
            hint = f" (did you mean {' or '.join(f'{group}.{c}' for c in close)}?)" if close else ""
            raise ParamError(f"{group}.{k}", kwargs[k], f"left out: {name} takes {', '.join(allowed)}{hint}")
    obj = cls(**kwargs)
    try:
        obj.check()
    except ParamError as e:
        key = _user_key(node, group, e.name) if e.name in kwargs else f"{group}.{e.name}"
        raise ParamError(key, e.value, e.allowed) from None
    return obj


def build(cfg: DictConfig) -> Job:
    """Validate ``cfg`` and build the job; raise :class:`ParamError` on the first bad value."""
    from pipeline.data import DATASETS
    from pipeline.learners import LEARNERS

    top = {p.name: p.coerce(cfg.get(p.name)) for p in TOP_LEVEL}
    dataset = _make(DATASETS, cfg.dataset, "dataset")
    learner = _make(LEARNERS, cfg.algorithm, "algorithm")
    from pipeline.plugins import BOUNDS

    BOUNDS.check_for(learner.name)  # a plug-in learner's own bound entry points load (nothing for a built-in)
    try:
        getattr(learner, "check_with", lambda _: None)(dataset)
    except ParamError as e:
        group = "algorithm" if e.name in cfg.algorithm else "dataset" if e.name in cfg.dataset else None
        key = _user_key(cfg[group], group, e.name) if group else e.name
        raise ParamError(key, e.value, e.allowed) from None
    name = cfg.get("name", "boundlab")  # also a name an experiment file sets
    experiment = NAME.coerce(str(name) if isinstance(name, int) and not isinstance(name, bool) else name)
    return Job(experiment=experiment, dataset=dataset, learner=learner, seed=top["seed"], force=top["force"])
