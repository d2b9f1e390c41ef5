"""A labelled sample as the learner sees it, the kinds of samples, and the base of the dataset classes."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import Any, ClassVar, Protocol

import numpy as np

from pipeline.data.certify import Stats
from pipeline.params import Declared, Param

# The kinds of data a dataset class makes (``Source.kind``, the sample's ``kind``) and a learner takes
# (``Learner.accepts``): the run loop refuses a pair whose kinds do not meet (pipeline.job.run.prepare).
KINDS = {
    "binary": "a sample X (m x d), labels +1/-1 (pipeline.data.Dataset)",
    "finite": "a binary sample with its finite hypothesis class as a prediction table (Dataset.hypotheses)",
    "multiclass": "a sample with labels 0..k-1, a held-out sample and draws (pipeline.data.MulticlassDataset)",
    "stream": "a binary stream read chunk by chunk, never held whole (pipeline.data.stream.StreamedData)",
}
BINARY = frozenset({"binary", "finite"})  # what a learner over a materialised binary sample accepts


@dataclass(frozen=True)
class Dataset:
    """A labelled sample with its certified statistics.

    ``directions`` are comparator directions known by construction (the generator's w*), offered to
    the bounds that minimise over comparators alongside the ones fitted to the data.
    ``hypotheses`` is an optional finite hypothesis class as its prediction table on the sample: an
    |H| x m array of +1/-1, row i the predictions of hypothesis i on x_1..x_m (Halving, Weighted Majority).
    ``extra``: scalars the generator knows of the sample (e.g. a worst-case certificate's duality gap), written
    into each run's row of the results table beside the certified statistics.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    stats: Stats
    directions: dict[str, np.ndarray] = field(default_factory=dict)
    hypotheses: np.ndarray | None = None
    extra: dict[str, int | float | str | bool] = field(default_factory=dict)  # further columns of the run's row

    @property
    def kind(self) -> str:
        """"finite" when the sample comes with its hypothesis class, else "binary" (:data:`KINDS`)."""
        return "binary" if self.hypotheses is None else "finite"


# --- What a learner reads of its data: one protocol per kind (KINDS; the multiclass one beside its dataset,
# pipeline.data.multiclass.MulticlassSample), so a type checker sees every read ---------------------------------

Matrix = Any
"""A sample's rows: a float array (m x d), or a scipy.sparse matrix for a sparse file (scipy ships no types)."""


class Sample(Protocol):
    """A materialised binary sample as a learner reads it (kinds ``binary`` and ``finite``): :class:`Dataset`,
    or any record with these members (a plug-in's sample, the Perceptron's worst-case instance)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def X(self) -> Matrix: ...  # noqa: N802 - the field's name (Dataset.X)
    @property
    def y(self) -> np.ndarray: ...
    @property
    def stats(self) -> Stats: ...
    @property
    def directions(self) -> dict[str, np.ndarray]: ...
    @property
    def hypotheses(self) -> np.ndarray | None: ...
    @property
    def extra(self) -> dict[str, int | float | str | bool]: ...


class StreamSample(Protocol):
    """A binary stream as a learner reads it (kind ``stream``, :class:`pipeline.data.stream.StreamedData`):
    ``n`` examples in (X, y) chunks, in order, never held whole."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def n(self) -> int: ...
    @property
    def stats(self) -> Stats: ...
    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]: ...


class Source(Declared):
    """Base of the dataset classes (generators and loaders, ``dataset=NAME``): ``name``, ``kind`` (one of
    :data:`KINDS`: what :meth:`generate` makes) and ``params`` (a tuple of :class:`pipeline.params.Param`,
    each with its default: the keyword-only constructor, the stored attributes, ``get_params()`` and
    ``check()`` are generated from it, :class:`pipeline.params.Declared`); ``generate(rng)`` makes the sample.

    >>> class Ones(Source):
    ...     name, kind = "ones", "binary"
    ...     params = (Param("n", int, lambda v: v >= 1, "an integer >= 1", default=10),)
    >>> Ones(n=4).get_params(), Ones().shape()
    ({'n': 4}, (10, None))
    """

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "binary"
    params: ClassVar[tuple[Param, ...]] = ()

    def shape(self) -> tuple[int | None, int | None]:
        """(n, d) of the sample as configured, before it exists (None where unknown), for the learners' size
        checks: by default its ``n`` and ``d`` parameters; a class that knows better overrides it."""
        return self.shape_of(self.get_params())

    @staticmethod
    def shape_of(params: dict[str, Any]) -> tuple[int | None, int | None]:
        """(n, d) from declared parameter values named ``n`` and ``d`` (None where absent or not an integer)."""
        n, d = params.get("n"), params.get("d")
        return (int(n) if isinstance(n, int) and not isinstance(n, bool) else None,
                int(d) if isinstance(d, int) and not isinstance(d, bool) else None)

    def generate(self, rng: np.random.Generator) -> Any:  # pragma: no cover - interface
        """The sample, every random draw from ``rng`` (the data's own stream)."""
        raise NotImplementedError


# --- What a sample costs in memory (upper-ish estimates, checked by the datasets' check() before any work) ---

# float64 n x d arrays alive at once while a generator builds a dense sample and certifies it with known
# witnesses (draws, the rows, np.insert's copy, certify's scaled copy and products: ~5 measured).
GENERATE_COPIES = 6
# certify_sample's solvers (the HiGHS LP, the cvxpy/Clarabel QP) per stored entry of the sample (~500 B
# measured, their own copies of the matrix included) and per feature (d-sized vectors: ~200 B measured).
SOLVER_BYTES_PER_ENTRY = 512
SOLVER_BYTES_PER_FEATURE = 256


def sample_bytes(n: int, d: int, *, entries: float | None = None, copies: int = GENERATE_COPIES,
                 solvers: bool = True) -> float:
    """Bytes to build and certify an n x d sample of ``entries`` stored entries (default n d, dense):
    ``copies`` float64 copies of it, plus the solvers of :func:`pipeline.data.certify.certify_sample`."""
    entries = float(n) * float(d) if entries is None else float(entries)
    total = 8.0 * copies * entries + 64.0 * n
    if solvers:
        total += SOLVER_BYTES_PER_ENTRY * entries + SOLVER_BYTES_PER_FEATURE * float(d)
    return total


def size_param(n: int, d: int) -> str:
    """The size parameter to name for an n x d sample: the larger one."""
    return "d" if d > n else "n"
