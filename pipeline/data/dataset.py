"""A labelled sample as the learner sees it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.data.certify import Stats


@dataclass(frozen=True)
class Dataset:
    """A labelled sample with its certified statistics and its provenance."""

    name: str
    X: np.ndarray
    y: np.ndarray
    stats: Stats
