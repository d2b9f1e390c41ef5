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
