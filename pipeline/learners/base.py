"""What every learner shares: parameters declared as data, and the one result type of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.params import Param, check_params, get_params


@dataclass
class Outcome:
    """What a learner's run produced, in the terms its bounds speak.

    quantities : the empirical quantities the bounds compare with (``Bound.quantity`` keys).
    curves : quantity -> (steps t, 1-based, increasing; the quantity after step t), for plots and MLflow.
    trace : per-step arrays of the run, saved as ``trace.npz`` (e.g. ``mistake``: 1 where step t erred).
    stats : statistics the bounds read beyond the data's certified ones; always ``T`` (steps made).
    parts : sub-runs judged separately (one-vs-all's binary problems): the learner's bounds are
        evaluated on each part, one row per part and bound, named in the ``part`` column.
    steps : per-step arrays (entry t-1 after step t, for t = 1..T) of the quantities and statistics an
        anytime bound is judged on at every step (``Bound.anytime == "trace"``), e.g. ``regret``.
    """

    quantities: dict[str, float]
    curves: dict[str, tuple[np.ndarray, np.ndarray]]
    trace: dict[str, np.ndarray]
    stats: dict[str, Any] = field(default_factory=dict)
    parts: dict[str, Outcome] = field(default_factory=dict)
    steps: dict[str, np.ndarray] = field(default_factory=dict)


class Learner:
    """Base of the learners: ``name``, ``params`` (a tuple of :class:`Param`), validation, and
    ``run(dataset, rng) -> Outcome``, the learner's whole protocol on one dataset (``rng`` is the
    algorithm's own random stream, separate from the data's)."""

    name: str = ""
    params: tuple[Param, ...] = ()

    def get_params(self) -> dict[str, object]:
        return get_params(self)

    def check(self) -> None:
        """Raise :class:`pipeline.params.ParamError` on an invalid parameter."""
        check_params(self)

    def check_data(self, dataset: Any) -> None:
        """Raise :class:`pipeline.params.UserError` if the learner cannot run on ``dataset``."""

    def run(self, dataset: Any, rng: np.random.Generator) -> Outcome:  # pragma: no cover - interface
        raise NotImplementedError


def planned_shape(dataset: Any) -> tuple[int | None, int | None]:
    """(n, d) of a dataset's sample as configured, before it exists (None where unknown): a file's from its
    cached read (``shape()``), a generator's from its parameters (d = n for the tight construction)."""
    shape = getattr(dataset, "shape", None)
    if callable(shape):
        return shape()
    n, d = getattr(dataset, "n", None), getattr(dataset, "d", None)
    n = int(n) if isinstance(n, int) and not isinstance(n, bool) else None
    d = int(d) if isinstance(d, int) and not isinstance(d, bool) else (n if getattr(dataset, "name", "") == "tight" else None)
    return n, d


def log_grid(T: int, points: int = 200) -> np.ndarray:
    """Steps 1..T on a log-spaced grid, T included."""
    return np.unique(np.geomspace(1, T, num=min(points, T)).round().astype(np.int64))
