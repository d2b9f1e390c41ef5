"""What every learner shares: parameters and accepted data kinds declared as data, and the one result type
of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from pipeline.contract import Run
from pipeline.data.dataset import BINARY, Source
from pipeline.params import Declared, Param


@dataclass
class Outcome:
    """What a learner's run produced: what it did, and (once :func:`pipeline.job.statistics.complete` has
    asked the statistic providers for what the bounds require) the quantities its bounds speak of.

    quantities : the empirical quantities the bounds compare with (``Bound.quantity`` keys).
    curves : quantity -> (steps t, 1-based, increasing; the quantity after step t), for plots and MLflow.
    trace : per-step arrays of the run, saved as ``trace.npz`` (e.g. ``mistake``: 1 where step t erred).
    stats : statistics the bounds read beyond the data's certified ones; always ``T`` (steps made).
    parts : sub-runs judged separately (one-vs-all's binary problems): the learner's bounds are
        evaluated on each part, one row per part and bound, named in the ``part`` column.
    steps : per-step arrays (entry t-1 after step t, for t = 1..T) of the quantities and statistics an
        anytime bound is judged on at every step (``Bound.anytime == "trace"``), e.g. ``regret``.
    run : what the run visited and produced, for the statistic providers (:mod:`pipeline.job.statistics`): one
        typed record of :mod:`pipeline.contract` per problem (e.g. :class:`~pipeline.contract.SvmRun`: the
        objective's data and weights, the index stream, the snapshot steps and the iterates there), whose type
        is the key under which the providers find its certified optimum and constants; None for a run that
        hands over nothing beyond its stats (never written to disk).
    """

    quantities: dict[str, float]
    curves: dict[str, tuple[np.ndarray, np.ndarray]]
    trace: dict[str, np.ndarray]
    stats: dict[str, Any] = field(default_factory=dict)
    parts: dict[str, Outcome] = field(default_factory=dict)
    steps: dict[str, np.ndarray] = field(default_factory=dict)
    run: Run | None = None


class Learner(Declared):
    """Base of the learners: ``name``, ``params`` (a tuple of :class:`Param`, each with its default: the
    keyword-only constructor, the stored attributes, ``get_params()`` and ``check()`` are generated from it,
    :class:`pipeline.params.Declared`), ``accepts`` (the dataset kinds it runs on,
    :data:`pipeline.data.dataset.KINDS`), and ``run(dataset, rng) -> Outcome``, the learner's whole protocol
    on one dataset (``rng`` is the algorithm's own random stream, separate from the data's).

    >>> class Still(Learner):
    ...     name = "still"
    ...     params = (Param("passes", int, lambda v: v >= 1, "an integer >= 1", default=1),)
    >>> Still(passes=2).get_params(), sorted(Still.accepts)
    ({'passes': 2}, ['binary', 'finite'])
    """

    name: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    accepts: ClassVar[frozenset[str]] = BINARY  # a materialised binary sample, with or without its finite class
    # other learners whose bounds speak about this one too (a variant whose quantities are the other's on
    # its own sequence: the batch Perceptron's updates are the Perceptron's); pipeline.plugins.for_learner
    judged_as: ClassVar[tuple[str, ...]] = ()

    def check_data(self, dataset: Any) -> None:
        """Raise :class:`pipeline.params.UserError` if the learner cannot run on ``dataset``."""

    def present(self, dataset: Any) -> Any:
        """The data the run presents: ``dataset`` itself, unless the learner's adversary plays a sequence of
        the theorem's whole class rather than of the sample (the Perceptron's ``ordering=exact``). Called once
        before the run; the statistics and the bounds are then those of the data returned."""
        return dataset

    def run(self, dataset: Any, rng: np.random.Generator) -> Outcome:  # pragma: no cover - interface
        raise NotImplementedError


def planned_shape(dataset: Any) -> tuple[int | None, int | None]:
    """(n, d) of a dataset's sample as configured, before it exists (None where unknown): what its class
    declares (:meth:`pipeline.data.dataset.Source.shape`: a generator's from its parameters, a file's from
    its cached read); for a dataset class that is not a :class:`Source`, its declared ``n`` and ``d``."""
    if isinstance(dataset, Source):
        return dataset.shape()
    return Source.shape_of(dataset.get_params())


def log_grid(T: int, points: int = 200) -> np.ndarray:
    """Steps 1..T on a log-spaced grid, T included."""
    return np.unique(np.geomspace(1, T, num=min(points, T)).round().astype(np.int64))
