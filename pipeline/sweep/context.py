"""The sweep context: what the ``boundlab`` command tells every process that runs its jobs.

One frozen record (:class:`Sweep`) travels as one environment variable (:data:`ENV`, JSON). The
environment is the one channel every launcher shares: joblib's worker processes, Ray workers on other
nodes (the Ray preset forwards this variable in its ``runtime_env``, conf/hydra/launcher/ray.yaml) and
submitit jobs start from the driver's environment and nothing else. Only this module knows the
variable's name; every other module reads the context with :func:`current` and changes it with
:func:`update`.

``conf/config.yaml`` reads the context through the ``boundlab`` resolver (``${boundlab:sweep_key}``,
``${boundlab:run_token}``) rather than through derived variables, so the context stays one variable.
The resolver is registered when this module is imported. Every process that resolves ``hydra.sweep.dir``
or ``hydra.run.dir`` has imported it by then: the driver through ``pipeline.cli``; a launcher's worker
through the task function (``pipeline.cli``) and the sweep callback (``pipeline.sweep.callbacks``), which it
unpickles before it composes the job's config.

>>> ctx = Sweep(driver_pid=42).with_(size=3, key="abc")
>>> Sweep.from_json(ctx.to_json()) == ctx
True
>>> ctx.ended() == Sweep(driver_pid=42)
True
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from omegaconf import OmegaConf

ENV = "BOUNDLAB_SWEEP"


@dataclass(frozen=True)
class Sweep:
    """What a job needs to know about the command and the sweep it belongs to.

    Parameters
    ----------
    driver_pid
        The command's process: a sweep's workers stop when it is gone (``pipeline.sweep.stages.watch_driver``);
        it also keeps two single runs started in the same second in two directories (``run_token``).
    driver_cwd
        The command's working directory, for launchers whose workers start elsewhere (Ray,
        ``pipeline.sweep.ray_worker``).
    key
        Names the default sweep directory (``multirun/NAME/KEY``): a hash of the command's overrides.
    size
        The sweep's number of jobs, known once the command has checked every one.
    start
        When the sweep's jobs started (epoch seconds), for the progress of each job's log lines.
    parent_run_id, sweep_id
        The sweep's MLflow parent run and its id, once the sweep callback has opened it.
    parent_new
        Whether this command created that parent run (rather than resuming one): it then has no earlier
        child runs, and a job need not look for any to supersede (``pipeline.tracking.runs.JobRun``).
    forced_from
        With ``force=true``, the lowest seed this sweep reruns (:func:`forces`): a ``seeds=auto`` round after
        the first reran seeds 0 to ``forced_from`` - 1 in this command's earlier rounds, so it reuses them.
    """

    driver_pid: int | None = None
    driver_cwd: str | None = None
    key: str | None = None
    size: int | None = None
    start: float | None = None
    parent_run_id: str | None = None
    sweep_id: str = ""
    parent_new: bool = False
    forced_from: int | None = None

    def with_(self, **changes: Any) -> Sweep:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    def ended(self) -> Sweep:
        """The context between sweeps: the command's fields kept, the sweep's cleared."""
        return Sweep(driver_pid=self.driver_pid, driver_cwd=self.driver_cwd)

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in dataclasses.asdict(self).items() if v not in (None, "", False)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Sweep:
        """The context in ``text`` ('' is the empty context). Fields this version does not know are
        ignored (a worker may run other code than the driver)."""
        if not text.strip():
            return cls()
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{ENV} is not the JSON of a sweep context ({e}): {text[:200]!r}") from None
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def publish(self) -> Sweep:
        """Make this the context of this process and of the processes it starts from now on."""
        os.environ[ENV] = self.to_json()
        return self

    def resolve(self, field: str) -> str:
        """The value of ``${boundlab:FIELD}`` in the config (conf/config.yaml)."""
        values = {"sweep_key": self.key or "adhoc", "run_token": str(self.driver_pid or 0)}
        if field not in values:
            raise ValueError(f"${{boundlab:{field}}}: unknown; choose one of {', '.join(values)}")
        return values[field]


def current() -> Sweep:
    """The context this process was given (the empty one outside a command)."""
    return Sweep.from_json(os.environ.get(ENV, ""))


def forces(force: bool, seed: int) -> bool:
    """Whether a job of ``seed`` whose config says ``force`` is rerun although done: not when this command
    already reran that seed in an earlier ``seeds=auto`` round (:attr:`Sweep.forced_from`)."""
    if not force:  # the context is read only when it can matter (a pack asks for each of its members)
        return False
    start = current().forced_from
    return start is None or seed >= start


def update(**changes: Any) -> Sweep:
    """Change fields of this process's context and publish it."""
    return current().with_(**changes).publish()


# Batches the command's pre-flight composed and validated (pipeline.sweep.preflight.preflight), by their overrides.
# Read only by the sweeper in the same process (hydra_plugins/boundlab_sweeper), so never in the environment.
_validated: set[tuple[str, ...]] = set()


def vouch(jobs: Iterable[Sequence[str]]) -> None:
    """Record that the pre-flight composed and validated each of ``jobs`` (override lists)."""
    _validated.update(tuple(job) for job in jobs)


def vouched(batch: Sequence[Sequence[str]]) -> bool:
    """Whether the pre-flight validated every job of ``batch``, exactly as given."""
    return bool(batch) and all(tuple(job) in _validated for job in batch)


def forget() -> None:
    """Drop the pre-flight's record (the command is done)."""
    _validated.clear()


def _resolve(field: str) -> str:
    return current().resolve(field)


if not OmegaConf.has_resolver("boundlab"):
    OmegaConf.register_new_resolver("boundlab", _resolve)  # never cached: the context changes between sweeps
