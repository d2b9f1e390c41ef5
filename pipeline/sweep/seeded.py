"""Jobs of a sweep that differ only in their seed, composed and built once (a seed round: thousands of them).

Every job of a sweep is composed by Hydra and validated into a :class:`~pipeline.job.config.Job`: ~4 ms a job in
the pre-flight and again in the pack that runs it, a quarter of a small packed run's cost. A job whose overrides
are an earlier job's with another ``seed=`` value is that earlier job with the other seed, provided the seed is
read only where the job reads it (the top-level ``seed``): :class:`Seeded` builds the first job of each such
family in full, refuses the short way for a family whose config names the seed anywhere else (an interpolation
``${seed}`` in a group, or in a key a group reads), and builds the family's second job both ways and compares
them (every parameter, the run's key, the classes), keeping the short way only if they agree. Anything else (no
``seed=``, a seed that is not a plain integer, two of them) is built in full, as before.
"""

from __future__ import annotations

import copy
import pickle
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Hydra's grammar of an integer (no sign: a seed is >= 0, and anything else is left to the full build's error)
_SEED = re.compile(r"seed=(0|[1-9][0-9]*)")

Full = Callable[[list[str]], tuple[Any, Any]]  # overrides -> (the job's composed config, its Job)


@dataclass
class _Family:
    cfg: Any  # the first job's composed config (every check but the seed's is the same for the family)
    job: Any  # the first job's Job
    usable: bool  # nothing but the top-level seed reads the seed
    checked: bool = False  # the second job was built in full and agreed
    frozen: bytes | None = None  # the first job pickled (:func:`freeze`), once checked: each job's copy unpickled


def split(overrides: Sequence[str]) -> tuple[tuple[str, ...], int] | None:
    """(the overrides with the seed's replaced by a placeholder, the seed), or None when they hold no plain integer
    ``seed=`` or more than one ``seed`` override.

    >>> split(["n=200", "seed=7"]), split(["seed=1", "seed=2"]), split(["seed=07"]), split(["n=1"])
    ((('n=200', 'seed=*'), 7), None, None, None)
    """
    found = [i for i, o in enumerate(overrides) if "seed" in o and o.lstrip("+~").split("=", 1)[0].strip() == "seed"]
    if len(found) != 1:
        return None
    m = _SEED.fullmatch(overrides[found[0]])
    if m is None:
        return None
    rest = tuple("seed=*" if i == found[0] else o for i, o in enumerate(overrides))
    return rest, int(m.group(1))


def reads_seed(cfg: Any) -> bool:
    """Whether anything in ``cfg`` but its top-level ``seed`` could read the seed: an interpolation naming it
    (``${seed}``, ``${oc.select:seed}``), at any depth (a chain ``dataset.n: ${n}``, ``n: ${seed}`` has a link
    that names it). Unresolved: what the config says, not its values."""
    from omegaconf import OmegaConf

    tree = OmegaConf.to_container(cfg, resolve=False)

    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            return any(walk(v) for v in node.values())
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return isinstance(node, str) and "${" in node and "seed" in node

    return any(walk(v) for k, v in (tree or {}).items() if k != "seed") if isinstance(tree, dict) else True


def with_seed(job: Any, seed: int, fresh: bool = True, frozen: bytes | None = None) -> Any:
    """``job`` with another seed; ``fresh``: on copies of its learner and dataset (a run may keep state on them,
    and each job of a sweep gets its own, as a full build gives it): ``frozen`` (:func:`freeze` of ``job``)
    unpickled when given, else a deep copy."""
    other = (pickle.loads(frozen) if frozen is not None else copy.deepcopy(job)) if fresh else copy.copy(job)
    other.seed = seed
    return other


def freeze(job: Any) -> bytes | None:
    """``job`` pickled, whose unpickling is a deep copy at a third of the cost (~4 against ~12 us a Perceptron
    job; a pack of 500 members makes 500); None when it cannot be pickled, or when the job, its learner or its
    dataset copies itself its own way (``__deepcopy__``, which pickling would pass by): those are deep-copied."""
    if any(hasattr(type(part), "__deepcopy__") for part in (job, getattr(job, "learner", None), getattr(job, "dataset", None))):
        return None
    try:
        return pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a lambda, a lock, a local class: anything pickle refuses is deep-copied
        return None


def _same(a: Any, b: Any) -> bool:
    return (type(a.learner) is type(b.learner) and type(a.dataset) is type(b.dataset) and a.params() == b.params()
            and a.key() == b.key() and a.experiment == b.experiment and a.force == b.force and a.seed == b.seed)


class Seeded:
    """The jobs of one sweep (or one pack), each built once per family of jobs that differ only in the seed
    (module docstring). ``fresh``: each job on its own copies of the learner and the dataset (a pack runs them);
    without, they share the first job's (the pre-flight only reads them)."""

    def __init__(self, fresh: bool = True) -> None:
        self.fresh = fresh
        self.families: dict[tuple[str, ...], _Family] = {}
        self.short = 0  # jobs built the short way

    def build(self, overrides: Sequence[str], full: Full) -> tuple[Any, Any, bool]:
        """(config, Job, whether it was built the short way) of the job ``overrides``; ``full(overrides)`` composes
        and builds it in full (and checks whatever else the caller checks of a job)."""
        found = split(overrides)
        if found is None:
            return (*full(list(overrides)), False)
        rest, seed = found
        family = self.families.get(rest)
        if family is None:
            cfg, job = full(list(overrides))
            self.families[rest] = _Family(cfg, job, usable=not reads_seed(cfg))
            # the family keeps its first job as built: the job handed out (and run) is a copy of it, so that what a
            # run leaves on its learner or dataset never reaches the jobs copied from the family later (a worker
            # keeps its families for the whole sweep: pipeline.sweep.pack)
            return cfg, (copy.deepcopy(job) if self.fresh else job), False
        if not family.usable:
            return (*full(list(overrides)), False)
        if not family.checked:
            cfg, job = full(list(overrides))
            family.checked, family.usable = True, _same(job, with_seed(family.job, seed, fresh=False))
            if family.usable and self.fresh:  # copies by pickle only where they agree with the full build too
                frozen = freeze(family.job)
                if frozen is not None and _same(job, with_seed(family.job, seed, frozen=frozen)):
                    family.frozen = frozen
            return cfg, job, False
        self.short += 1
        return family.cfg, with_seed(family.job, seed, self.fresh, family.frozen), True
