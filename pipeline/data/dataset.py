"""A labelled sample as the learner sees it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.data.certify import Stats


@dataclass(frozen=True)
class Dataset:
    """A labelled sample with its certified statistics.

    ``directions`` are comparator directions known by construction (the generator's w*), offered to
    the bounds that minimise over comparators alongside the ones fitted to the data.
    ``hypotheses`` is an optional finite hypothesis class as its prediction table on the sample: an
    |H| x m array of +1/-1, row i the predictions of hypothesis i on x_1..x_m (Halving, Weighted Majority).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    stats: Stats
    directions: dict[str, np.ndarray] = field(default_factory=dict)
    hypotheses: np.ndarray | None = None


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
